public import SluiceCore

/// Options of the `throttle` transform.
public struct ThrottleTransformConfig: TransformConfig {
    public static let typeName = "throttle"
    public static let summary = "Lets at most max_events per window_secs through, per key if one is given."

    /// The expression whose value has a budget of its own; `nil`: one budget for all events.
    let key: Expression?
    /// Events let through per window.
    public let maxEvents: Int
    /// The window's length in milliseconds; windows are aligned to the Unix epoch.
    public let windowMillis: Int64
    /// Keys remembered at most; a forgotten key starts a fresh budget.
    public let maxKeys: Int

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        let key = options.value("key")?.expression()
        let maxEvents = options.required(
            "max_events", note: "events let through per window, for example 'max_events: 10'")?
            .int(in: 1...1_000_000_000)
        let window = options.value("window_secs")?.double(in: 0.001...31_536_000) ?? 1
        let maxKeys = options.value("max_keys")?.int(in: 1...100_000_000) ?? 100_000
        self.key = key
        self.maxEvents = try options.validated(maxEvents)
        self.windowMillis = Int64((window * 1000).rounded())
        self.maxKeys = maxKeys
    }

    public func makeTransform(_ context: TransformContext) -> any Transform {
        ThrottleTransform(config: self, errors: EvaluationErrorLog(componentID: context.id, log: context.log))
    }
}
