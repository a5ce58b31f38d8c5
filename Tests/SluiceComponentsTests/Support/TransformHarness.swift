import SluiceSinks
import SluiceSources
import SluiceTransforms
import SluiceYAML
import Testing

@testable import SluiceCore

/// Makes one running transform from its options, to drive it directly: batches in, time chosen by the test.
enum TransformHarness {
    static let catalog = ComponentCatalog(TransformCatalog.all)

    /// The transform of type `type` with the options in `yaml` (a flow mapping), failing the test on any
    /// diagnostic.
    static func make(
        _ type: String, _ yaml: String, readOutputs: Set<String> = [], log: Logger = Logger { _ in },
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> any Transform {
        let blueprint = try self.blueprint(type, yaml, sourceLocation: sourceLocation)
        guard case .transform(let make) = blueprint.maker else {
            Issue.record("not a transform", sourceLocation: sourceLocation)
            throw InvalidConfig()
        }
        return make(TransformContext(id: "t", log: log, readOutputs: readOutputs))
    }

    /// The configuration of a transform of type `type` with the options in `yaml`.
    static func config(_ type: String, _ yaml: String, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> any TransformConfig
    {
        try #require(
            try blueprint(type, yaml, sourceLocation: sourceLocation).config as? any TransformConfig,
            sourceLocation: sourceLocation)
    }

    private static func blueprint(_ type: String, _ yaml: String, sourceLocation: SourceLocation) throws
        -> ComponentBlueprint
    {
        let diagnostics = DiagnosticLog()
        let root = try #require(try YAMLParser.parse(yaml), sourceLocation: sourceLocation)
        let options = try #require(
            ConfigNode(root, name: "the transform", log: diagnostics, environment: [:]).mapping(),
            sourceLocation: sourceLocation)
        let blueprint = try #require(
            try catalog.configure(.transform, typeName: type, options: options), sourceLocation: sourceLocation)
        #expect(diagnostics.diagnostics.isEmpty, "\(diagnostics.diagnostics)", sourceLocation: sourceLocation)
        return blueprint
    }

    /// Runs one batch through `transform` at wall-clock time `now`; returns what it left and the pass. `asText`
    /// gives the transform the events as JSON text, as a source would, rather than as values.
    static func process(_ transform: inout any Transform, _ values: [JSONValue], at now: Int64, asText: Bool = false)
        -> ([JSONValue], TransformPass)
    {
        var events = values.map { value in
            // Sluice's own JSON text always parses.
            asText ? try! Event(json: Array(JSONWriter.string(value).utf8)) : Event(value)
        }
        if asText, let parsed = events.first(where: { !$0.isText }) {
            Issue.record("not text an event keeps as it is: \(parsed.value)")
        }
        var pass = TransformPass(nowMillis: now)
        transform.process(&events, &pass)
        return (events.map(\.value), pass)
    }
}
