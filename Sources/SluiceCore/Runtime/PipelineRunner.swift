internal import SluiceSync
internal import Synchronization

/// What the process around a pipeline provides: the standard descriptors and the logger.
public struct RuntimeEnvironment: Sendable {
    /// The descriptor `stdin` sources read.
    public var standardInput: Int32
    /// The writer for standard output, shared by `stdout` sinks and metrics written to stdout.
    public var standardOutput: OutputWriter
    /// Where warnings and errors go.
    public var log: Logger

    public init(standardInput: Int32, standardOutput: OutputWriter, log: Logger) {
        self.standardInput = standardInput
        self.standardOutput = standardOutput
        self.log = log
    }
}

/// How a run ended.
public struct RunOutcome: Sendable, Equatable {
    /// Runtime failures, one message each; empty when the run succeeded.
    public var failures: [String]
    /// True when standard output was closed by its reader, which ends a run quietly.
    public var outputClosed: Bool
}

/// Runs a ``PipelineDefinition``: one task per component, an ``EventBuffer`` on every transform's and sink's
/// input, and a ``MetricsReporter`` alongside.
///
/// The run ends when every source has ended and every buffer has drained. ``stop()`` makes sources stop reading;
/// what they already sent still drains to the sinks.
public final class PipelineRunner: Sendable {
    /// The pipeline being run.
    public let definition: PipelineDefinition
    /// Every component's counters, in definition order.
    public let metrics: [ComponentMetrics]
    private let environment: RuntimeEnvironment
    private let stopSignal = StopSignal()
    private let failures = Mutex<[String]>([])
    private let outputClosed = Mutex(false)

    public init(definition: PipelineDefinition, environment: RuntimeEnvironment) {
        self.definition = definition
        self.environment = environment
        self.metrics = definition.components.map {
            ComponentMetrics(id: $0.id, kind: $0.kind, typeName: $0.typeName)
        }
    }

    /// Asks every source to stop; buffered events still drain.
    public func stop() { stopSignal.stop() }

    /// The ids that read from each component.
    public var consumers: [String: [String]] {
        Dictionary(uniqueKeysWithValues: definition.components.map { ($0.id, definition.consumers(of: $0.id)) })
    }

    /// Runs the pipeline to the end; `reporter` reports periodically during the run and once more at the end.
    public func run(reporter: MetricsReporter?) async -> RunOutcome {
        let metricsByID = Dictionary(uniqueKeysWithValues: metrics.map { ($0.id, $0) })
        var buffers: [String: EventBuffer] = [:]
        for component in definition.components where component.kind != .source {
            buffers[component.id] = EventBuffer(
                policy: component.buffer ?? .default, producers: component.inputs.count,
                owner: metricsByID[component.id]!)
        }
        let periodic = Task { await reporter?.runPeriodically() }
        await withTaskGroup(of: Void.self) { group in
            for component in definition.components {
                let metrics = metricsByID[component.id]!
                let output = EventOutput(
                    targets: definition.consumers(of: component.id).map { buffers[$0]! }, metrics: metrics)
                switch component.blueprint {
                case .source(let config):
                    let context = SourceContext(
                        id: component.id, output: output, metrics: metrics, log: environment.log, stop: stopSignal,
                        standardInput: environment.standardInput)
                    group.addTask { await self.runSource(config.makeSource(), context) }
                case .transform(let config):
                    let input = buffers[component.id]!
                    let transform = config.makeTransform(TransformContext(id: component.id, log: environment.log))
                    group.addTask { await self.runTransform(transform, input, output, metrics) }
                case .sink(let config):
                    let input = buffers[component.id]!
                    let context = SinkContext(
                        id: component.id, metrics: metrics, log: environment.log,
                        standardOutput: environment.standardOutput)
                    group.addTask { await self.runSink(config.makeSink(), input, context) }
                }
            }
        }
        periodic.cancel()
        await periodic.value
        if let reporter { await reporter.write(reporter.makeReport(final: true)) }
        return RunOutcome(failures: failures.locked { $0 }, outputClosed: outputClosed.locked { $0 })
    }

    private func runSource(_ source: any Source, _ context: SourceContext) async {
        do {
            try await source.run(context)
        } catch {
            fail("source '\(context.id)': \(error)")
        }
        context.output.finish()
    }

    private func runTransform(
        _ transform: any Transform, _ input: EventBuffer, _ output: EventOutput, _ metrics: ComponentMetrics
    ) async {
        var transform = transform
        while var batch = await input.next() {
            var discards = DiscardCounts()
            transform.process(&batch, discards: &discards)
            metrics.recordDiscarded(discards)
            await output.send(batch)
        }
        output.finish()
    }

    private func runSink(_ sink: any Sink, _ input: EventBuffer, _ context: SinkContext) async {
        do {
            try await sink.run(input, context)
        } catch OutputError.closedByReader {
            // `sluice run p.yaml | head -1`: the reader has what it wanted; stop quietly.
            outputClosed.locked { $0 = true }
            input.close()
            stopSignal.stop()
            return
        } catch {
            fail("sink '\(context.id)': \(error)")
        }
        input.close()
    }

    /// Records a failure, reports it, and stops the pipeline: a run with a failed component ends with exit 1.
    private func fail(_ message: String) {
        failures.locked { $0.append(message) }
        environment.log.error(message)
        stopSignal.stop()
    }
}
