public import SluiceCore

/// A running pipeline, as ``Pipeline/run(inputs:log:_:)`` hands it to its body: its `host` outputs, its metrics, and
/// a way to stop it.
public struct PipelineRun: Sendable {
    private let runner: PipelineRunner
    private let bindings: HostBindings
    /// The ids of the pipeline's `host` sinks.
    public let outputIDs: [String]
    let reporter: MetricsReporter

    init(runner: PipelineRunner, bindings: HostBindings, outputIDs: [String]) {
        self.runner = runner
        self.bindings = bindings
        self.outputIDs = outputIDs
        // Reports are made on request and never written: the writer is not used.
        reporter = MetricsReporter(
            settings: MetricsSettings(intervalSecs: 0), currentComponents: { runner.metrics },
            currentConsumers: { runner.consumers }, writer: .standardError)
    }

    /// The events reaching the `host` sink `id`. Naming anything else is a programming error and stops the program,
    /// as an index out of range does.
    public func output(_ id: String) -> PipelineOutput {
        guard let port = bindings.output(for: id) else {
            preconditionFailure(
                "'\(id)' is not a host sink of this pipeline; its host sinks: "
                    + (outputIDs.isEmpty ? "none" : outputIDs.joined(separator: ", ")))
        }
        return PipelineOutput(port: port)
    }

    /// Every component's counters since the run began, with rates since the previous call (or the start).
    public func report() -> MetricsReport { reporter.makeReport(final: false) }

    /// Asks every source to stop; what they already sent still drains.
    public func stop() { runner.stop() }
}
