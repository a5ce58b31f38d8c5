internal import SluiceSinks
internal import SluiceSources
internal import SluiceTransforms

/// A validated pipeline, ready to run inside a Swift program: Sluice's components, buffers and metrics, fed from
/// and read into the program's own `AsyncSequence`s through `host` sources and sinks.
///
/// ```swift
/// let pipeline = try Pipeline(yaml: """
///     sources: {readings: {type: host}}
///     transforms: {hot: {type: filter, inputs: [readings], condition: .temperature > 30}}
///     sinks: {alerts: {type: host, inputs: [hot]}}
///     """)
/// let result = try await pipeline.run(inputs: ["readings": .events(readings)]) { run in
///     for await alert in run.output("alerts") { print(alert.jsonText) }
/// }
/// ```
///
/// A pipeline touches standard input and output only when it names a `stdin` source or a `stdout` sink, and
/// writes no metrics reports of its own (a `metrics:` section is ignored): ``PipelineRun/report()`` and
/// ``PipelineResult/report`` give them to the program.
public struct Pipeline: Sendable {
    /// The validated components, their options and buffers, and the file's tests.
    public let definition: PipelineDefinition
    private let text: String
    private let environment: [String: String]

    /// Reads and validates a pipeline from YAML (or JSON) text; `${NAME}` is replaced from `environment` (the
    /// process environment is not read unless it is passed). Throws every problem found, each with its line and
    /// column.
    public init(yaml text: String, environment: [String: String] = [:]) throws(PipelineError) {
        let result = PipelineLoader(catalog: Self.catalog(for: nil), environment: environment).load(text)
        guard let definition = result.definition else {
            throw PipelineError(diagnostics: result.diagnostics, source: text)
        }
        self.definition = definition
        self.text = text
        self.environment = environment
    }

    /// Every component type a library pipeline may name: the `sluice` command's, and the `host` source and sink.
    public static var catalog: ComponentCatalog { catalog(for: nil) }

    /// The catalog whose `host` components find their inputs and outputs in `bindings` (none when `nil`).
    static func catalog(for bindings: HostBindings?) -> ComponentCatalog {
        let bindings = bindings ?? HostBindings(inputs: [:], outputIDs: [])
        return ComponentCatalog(
            SourceCatalog.all(standardInput: 0)
                + [.source(HostInputSourceConfig.self) { _ in HostInputSource(inputs: bindings) }]
                + TransformCatalog.all
                + SinkCatalog.all(standardOutput: standardOutput)
                + [.sink(HostOutputSinkConfig.self) { _ in HostOutputSink(outputs: bindings) }])
    }

    /// Standard output, for `stdout` sinks; nothing is written to it unless a pipeline has one.
    private static let standardOutput = OutputWriter(fileDescriptor: 1, label: "stdout")

    /// The ids of the `host` components of `kind`.
    public func hostComponents(_ kind: ComponentKind) -> [String] {
        let host = kind == .source ? HostInputSourceConfig.typeName : HostOutputSinkConfig.typeName
        return definition.components.filter { $0.kind == kind && $0.typeName == host }.map(\.id)
    }

    /// Runs the pipeline, feeding each `host` source from `inputs` (by id; every host source needs one), while
    /// `body` reads the `host` sinks through ``PipelineRun/output(_:)``. Returns when the pipeline has ended
    /// (every source ended and every buffer drained) and `body` has returned.
    ///
    /// When `body` returns, outputs it did not read to the end are let go: their remaining events are discarded
    /// and counted under `error`, and the pipeline is stopped (its sources stop; what is buffered drains), as a
    /// `sluice run` whose reader went away. A pipeline without host outputs runs to its end. Cancelling the task
    /// that calls `run` stops the sources the same way; what they already sent still drains. Errors `body`
    /// throws are rethrown once the pipeline has ended; component failures are in the result, not thrown.
    public func run(
        inputs: [String: PipelineInput] = [:], log: Logger = .standardError,
        _ body: (PipelineRun) async throws -> Void = { _ in }
    ) async throws -> PipelineResult {
        let sources = hostComponents(.source)
        for id in sources where inputs[id] == nil {
            throw PipelineError(message: "host source '\(id)' has no input: pass inputs: [\"\(id)\": .events(...)]")
        }
        for id in inputs.keys where !sources.contains(id) {
            throw PipelineError(
                message: "inputs names '\(id)', which is not a host source; host sources: "
                    + (sources.isEmpty ? "none" : sources.joined(separator: ", ")))
        }
        let outputIDs = hostComponents(.sink)
        let bindings = HostBindings(inputs: inputs, outputIDs: outputIDs)
        // Read again with this run's bindings; the text was valid a moment ago and still is.
        let loaded = PipelineLoader(catalog: Self.catalog(for: bindings), environment: environment).load(text)
        guard let definition = loaded.definition else {
            throw PipelineError(diagnostics: loaded.diagnostics, source: text)
        }
        let runner = PipelineRunner(definition: definition, log: log)
        let run = PipelineRun(runner: runner, bindings: bindings, outputIDs: outputIDs)
        async let outcome = runner.run(reporter: nil)
        var thrown: (any Error)?
        do {
            try await body(run)
        } catch {
            thrown = error
        }
        if bindings.releaseOutputs() { runner.stop() }
        let ended = await outcome
        if let thrown { throw thrown }
        return PipelineResult(failures: ended.failures, report: run.reporter.makeReport(final: true))
    }
}

/// How a run ended.
public struct PipelineResult: Sendable {
    /// Component failures, one message each; empty when the run succeeded.
    public let failures: [String]
    /// The final metrics report: every component's counters, exact once the pipeline has drained.
    public let report: MetricsReport

    /// True when no component failed.
    public var succeeded: Bool { failures.isEmpty }
}
