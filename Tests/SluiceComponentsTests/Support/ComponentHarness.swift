import SluiceCore
import SluiceSinks
import SluiceSources
import SluiceTesting
import SluiceTransforms
import Testing

/// Loads and runs pipelines with the real components plus the collecting test sink.
enum ComponentHarness {
    static let catalog = ComponentCatalog(
        SourceCatalog.all(standardInput: -1) + TransformCatalog.all
            + SinkCatalog.all(standardOutput: OutputWriter(fileDescriptor: -1, label: "unused")) + TestCatalog.types)

    static func load(_ yaml: String) -> PipelineLoader.Result {
        PipelineLoader(catalog: catalog, environment: [:]).load(yaml)
    }

    /// Runs `yaml` to the end and returns what the `collect` sink named `name` received and the final report.
    static func run(_ yaml: String, collecting name: String) async throws -> ([JSONValue], MetricsReport) {
        let (events, report) = try await runEvents(yaml, collecting: name)
        return (events.map(\.value), report)
    }

    /// ``run(_:collecting:)``, with the events as they arrived (text or value).
    static func runEvents(_ yaml: String, collecting name: String) async throws -> ([Event], MetricsReport) {
        let result = load(yaml)
        #expect(result.diagnostics.filter { $0.severity == .error }.isEmpty, "\(result.diagnostics)")
        let definition = try #require(result.definition)
        let runner = PipelineRunner(definition: definition, log: Logger { _ in })
        _ = await runner.run(reporter: nil)
        let report = MetricsReporter(
            settings: definition.metrics, components: runner.metrics, consumers: runner.consumers,
            writer: OutputWriter(fileDescriptor: -1, label: "unused")
        ).makeReport(final: true)
        for component in report.components {
            #expect(component.received == component.sent + component.discarded.total, "\(component.id) balances")
        }
        return (CollectedEvents.take(name), report)
    }

    /// Renders the diagnostics of loading `yaml` as `sluice validate` prints them.
    static func diagnostics(_ yaml: String) -> String {
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false)
        return load(yaml).diagnostics.map { $0.rendered(path: "p.yaml", sourceLines: lines) }.joined(separator: "\n")
    }
}
