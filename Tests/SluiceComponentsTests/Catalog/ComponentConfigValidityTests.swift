import SluiceSinks
import SluiceSources
import SluiceTransforms
import SluiceYAML
import Testing

@testable import SluiceCore

/// A config value is complete and valid, or it is not made: for every component type, one bad option makes its
/// reader throw after recording a diagnostic at that option, and the loader makes no component of it.
struct ComponentConfigValidityTests {
    static let catalog = ComponentCatalog(
        SourceCatalog.all(standardInput: -1) + TransformCatalog.all
            + SinkCatalog.all(standardOutput: OutputWriter(fileDescriptor: -1, label: "unused")))

    /// Each type with options that are valid, and the same options with one value made wrong.
    static let cases: [(ComponentKind, String, valid: String, invalid: String)] = [
        (.source, "stdin", "{decoding: text}", "{decoding: yaml}"),
        (.source, "simulator", "{rate: 5, seed: 1}", "{rate: 5, seed: 1, start_time: yesterday}"),
        (.source, "websocket", "{url: 'ws://127.0.0.1:9/'}", "{url: 'http://127.0.0.1:9/'}"),
        (
            .source, "websocket", "{url: 'ws://127.0.0.1:9/'}",
            "{url: 'ws://127.0.0.1:9/', reconnect: {max_delay_ms: 0}}"
        ),
        (.source, "websocket_server", "{listen: 9000}", "{listen: 'localhost:port'}"),
        (.source, "file", "{include: [/var/log/*.log]}", "{include: [logs/*.log]}"),
        (.source, "file", "{include: /var/log/a.log}", "{include: /var/log/a.log, read_from: middle}"),
        (
            .source, "kafka", "{bootstrap_servers: 'k:9092', topics: [t], group_id: g}",
            "{bootstrap_servers: 'k:9092', topics: [t], group_id: g, librdkafka_options: {session.timeout.ms: soon}}"
        ),
        (.transform, "filter", "{condition: '.a > 1'}", "{condition: '.a >'}"),
        (.transform, "map", "{set: {b: '.a + 1'}}", "{set: {b: '.a +'}}"),
        (
            .transform, "aggregate", "{window: {type: tumbling, size_secs: 60}, aggregations: {n: count()}}",
            "{window: {type: hopping, size_secs: 60, hop_secs: 7}, aggregations: {n: count()}}"
        ),
        (.transform, "dedupe", "{fields: [.id]}", "{fields: [.id], cache: {ttl_secs: 0}}"),
        (.transform, "throttle", "{max_events: 5}", "{max_events: 5, window_secs: -1}"),
        (.transform, "sample", "{rate: 10}", "{rate: 0}"),
        (.transform, "route", "{routes: {a: '.x > 1'}}", "{routes: {_a: '.x > 1'}}"),
        (.sink, "stdout", "{encoding: text}", "{encoding: text, template: '{.a'}"),
        (.sink, "file", "{path: out.jsonl}", "{path: ''}"),
        (.sink, "blackhole", "{}", "{}"),
        (.sink, "websocket_server", "{listen: 9000}", "{listen: 9000, max_clients: 0}"),
        (
            .sink, "kafka", "{bootstrap_servers: 'k:9092', topic: 'a-{.x}'}",
            "{bootstrap_servers: 'k:9092', topic: 'a-{.x'}"
        ),
        (.sink, "kafka", "{bootstrap_servers: 'k:9092', topic: t}", "{bootstrap_servers: 'k:9092', topic: t, acks: 2}"),
    ]

    static func configure(_ kind: ComponentKind, _ type: String, _ yaml: String) throws -> (
        Result<ComponentBlueprint?, InvalidConfig>, DiagnosticLog
    ) {
        let log = DiagnosticLog()
        let root = try #require(try YAMLParser.parse(yaml))
        let options = try #require(ConfigNode(root, name: "the component", log: log, environment: [:]).mapping())
        return (
            Result { () throws(InvalidConfig) in try catalog.configure(kind, typeName: type, options: options) }, log
        )
    }

    @Test(arguments: cases.indices)
    func oneBadOptionMeansNoConfig(_ index: Int) throws {
        let (kind, type, valid, invalid) = Self.cases[index]
        let (made, validLog) = try Self.configure(kind, type, valid)
        #expect(validLog.diagnostics.filter { $0.severity == .error }.isEmpty, "\(validLog.diagnostics)")
        #expect(try made.get()?.config != nil)
        guard valid != invalid else { return }
        let (refused, log) = try Self.configure(kind, type, invalid)
        #expect(throws: InvalidConfig.self, "\(type) \(invalid)") { try refused.get() }
        #expect(log.errorCount >= 1)
        #expect(log.diagnostics.allSatisfy { $0.mark != nil }, "every error is placed")
    }

    @Test func everyTypeOfTheCatalogIsCovered() {
        let covered = Set(Self.cases.map { "\($0.0.rawValue) \($0.1)" })
        for entry in Self.catalog.types {
            #expect(covered.contains("\(entry.kind.rawValue) \(entry.typeName)"), "\(entry.typeName)")
        }
    }
}
