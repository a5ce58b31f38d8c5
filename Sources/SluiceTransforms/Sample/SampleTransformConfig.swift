public import SluiceCore

/// Options of the `sample` transform.
public struct SampleTransformConfig: TransformConfig {
    public static let typeName = "sample"
    public static let summary = "Keeps 1 event in rate; with a key, by a hash of it, so a key is kept or dropped whole."

    /// One event in this many is kept.
    public let rate: Int
    /// Decides by a hash of this expression's value instead of by counting.
    let key: Expression?

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        let rate = options.required("rate", note: "keep 1 event in this many, for example 'rate: 10'")?
            .int(in: 1...1_000_000_000)
        let key = options.value("key")?.expression()
        try options.validated()
        self.rate = try options.validated(rate)
        self.key = key
    }

    /// With a key, each event is kept or not by its key's hash alone; without, by a count of the events.
    public var isStateless: Bool { key != nil }

    public func makeTransform(_ context: TransformContext) -> any Transform {
        SampleTransform(config: self, errors: EvaluationErrorLog(componentID: context.id, log: context.log))
    }
}
