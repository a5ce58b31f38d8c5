import SluiceSinks
import SluiceSources
import SluiceYAML
import Testing

@testable import SluiceCore

/// The `kafka` options are checked when the file is read: librdkafka's own names and values, at their lines, and
/// a value from the environment is never repeated.
struct KafkaConfigTests {
    func options(_ yaml: String, _ log: DiagnosticLog, environment: [String: String] = [:]) throws -> ConfigMapping {
        let root = try #require(try YAMLParser.parse(yaml))
        return try #require(ConfigNode(root, name: "the component", log: log, environment: environment).mapping())
    }

    func configure(_ kind: ComponentKind, _ yaml: String, environment: [String: String] = [:]) throws
        -> (made: Bool, diagnostics: [Diagnostic])
    {
        let log = DiagnosticLog()
        let options = try options(yaml, log, environment: environment)
        let made = try? ComponentConfigValidityTests.catalog.configure(kind, typeName: "kafka", options: options)
        return (made != nil, log.diagnostics)
    }

    /// A source with one librdkafka setting, `setting` (its line is 5).
    func configureSource(librdkafka setting: String) throws -> (made: Bool, diagnostics: [Diagnostic]) {
        try configure(
            .source,
            """
            bootstrap_servers: localhost:9092
            topics: [t]
            group_id: g
            librdkafka_options:
              \(setting)
            """)
    }

    @Test func aMisspeltLibrdkafkaSettingIsAnErrorAtItsValue() throws {
        let (made, diagnostics) = try configureSource(librdkafka: #"sesion.timeout.ms: "6000""#)
        #expect(!made)
        let error = try #require(diagnostics.first)
        #expect(error.message.contains("librdkafka does not accept 'sesion.timeout.ms'"), "\(error.message)")
        #expect(error.mark == FilePosition(line: 5, column: 22))
    }

    @Test func aSecretFromTheEnvironmentIsNeverRepeated() throws {
        let (made, diagnostics) = try configure(
            .sink,
            """
            bootstrap_servers: localhost:9092
            topic: t
            librdkafka_options: {session.timeout.ms: "${TIMEOUT}"}
            """, environment: ["TIMEOUT": "hunter2-secret"])
        #expect(!made)
        #expect(diagnostics.count == 1)
        #expect(diagnostics.allSatisfy { !$0.message.contains("hunter2") && !$0.notes.joined().contains("hunter2") })
        #expect(diagnostics.first?.message.contains("a value from the environment for 'session.timeout.ms'") == true)
    }

    @Test func aDrainTimeoutAtOrAboveTheSessionTimeoutIsAnErrorAtItsValue() throws {
        let source = """
            bootstrap_servers: localhost:9092
            topics: [t]
            group_id: g
            librdkafka_options: {session.timeout.ms: "6000"}
            """
        let (made, diagnostics) = try configure(.source, source + "\ndrain_timeout_ms: 6000")
        #expect(!made)
        let error = try #require(diagnostics.first)
        #expect(error.message.contains("'drain_timeout_ms' (6000) must be below the session timeout (6000 ms)"))
        #expect(error.mark == FilePosition(line: 5, column: 19))
        #expect(try configure(.source, source + "\ndrain_timeout_ms: 5999").made)
    }

    @Test func theDrainTimeoutDefaultsToFiveSecondsOrHalfTheSessionTimeout() throws {
        func drain(_ more: String) throws -> Int? {
            let yaml = "bootstrap_servers: localhost:9092\ntopics: [t]\ngroup_id: g\n" + more
            return (try? KafkaSourceConfig(reading: try options(yaml, DiagnosticLog())))?.drainTimeoutMillis
        }
        #expect(try drain("") == 5_000)
        #expect(try drain("librdkafka_options: {session.timeout.ms: \"6000\"}") == 3_000)
        #expect(try drain("drain_timeout_ms: 0") == 0)
    }

    @Test func theCommitSettingsAtLeastOnceRestsOnAreSluicesOwn() throws {
        let (made, diagnostics) = try configureSource(librdkafka: #"enable.auto.offset.store: "true""#)
        #expect(!made)
        let error = try #require(diagnostics.first)
        #expect(error.message == "'librdkafka_options.enable.auto.offset.store' is Sluice's own", "\(error.message)")
        #expect(error.mark == FilePosition(line: 5, column: 3))
        #expect(error.notes.joined().contains("commit_interval_ms"))
    }

    @Test func missingBrokersTopicsAndGroupAreEachNamed() throws {
        let (made, diagnostics) = try configure(.source, "{auto_offset_reset: newest}")
        #expect(!made)
        let messages = diagnostics.map(\.message).joined(separator: "\n")
        for expected in ["'bootstrap_servers'", "'topics'", "'group_id'", "newest"] {
            #expect(messages.contains(expected), "\(expected) in:\n\(messages)")
        }
    }
}
