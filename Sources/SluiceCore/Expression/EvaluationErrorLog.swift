/// Reports expression failures on standard error: the first few in full (component, expression, reason), then a
/// count at most once a second, so a pipeline with a systematic mistake cannot flood the terminal.
public struct EvaluationErrorLog: Sendable {
    private let componentID: String
    private let log: Logger
    private var reporter = RateLimitedReporter(burst: 5)

    /// Reports the evaluation errors of component `componentID` through `log`.
    public init(componentID: String, log: Logger) {
        self.componentID = componentID
        self.log = log
    }

    /// Reports that `expression` failed with `error` and the event was discarded.
    public mutating func report(_ error: EvaluationError, in expression: String) {
        reporter.report(to: log) {
            "\(componentID): '\(expression)' failed: \(error.reason); the event was discarded (cause error)"
        } summary: { [componentID] in
            "\(componentID): \($0) more events were discarded by expression errors (cause error)"
        }
    }
}
