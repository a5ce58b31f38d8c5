import SluiceSinks
import SluiceSources
import SluiceYAML
import Testing

@testable import SluiceCore

/// The `kafka` options are checked when the file is read: librdkafka's own names and values, at their lines, and
/// a value from the environment is never repeated.
struct KafkaConfigTests {
    func configure(_ kind: ComponentKind, _ yaml: String, environment: [String: String] = [:]) throws
        -> (made: Bool, diagnostics: [Diagnostic])
    {
        let log = DiagnosticLog()
        let root = try #require(try YAMLParser.parse(yaml))
        let options = try #require(
            ConfigNode(root, name: "the component", log: log, environment: environment).mapping())
        let made = try? ComponentConfigValidityTests.catalog.configure(kind, typeName: "kafka", options: options)
        return (made != nil, log.diagnostics)
    }

    @Test func aMisspeltLibrdkafkaSettingIsAnErrorAtItsValue() throws {
        let (made, diagnostics) = try configure(
            .source,
            """
            bootstrap_servers: localhost:9092
            topics: [t]
            group_id: g
            librdkafka_options:
              sesion.timeout.ms: "6000"
            """)
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

    @Test func missingBrokersTopicsAndGroupAreEachNamed() throws {
        let (made, diagnostics) = try configure(.source, "{auto_offset_reset: newest}")
        #expect(!made)
        let messages = diagnostics.map(\.message).joined(separator: "\n")
        for expected in ["'bootstrap_servers'", "'topics'", "'group_id'", "newest"] {
            #expect(messages.contains(expected), "\(expected) in:\n\(messages)")
        }
    }
}
