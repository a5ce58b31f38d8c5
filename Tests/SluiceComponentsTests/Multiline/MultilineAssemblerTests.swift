import SluiceRegex
import SluiceYAML
import Testing

@testable import SluiceCore
@testable import SluiceSources

struct MultilineAssemblerTests {
    static func config(_ yaml: String) throws -> MultilineConfig {
        let diagnostics = DiagnosticLog()
        let root = try #require(try YAMLParser.parse(yaml))
        let config = MultilineConfig.read(ConfigNode(root, name: "'multiline'", log: diagnostics, environment: [:]))
        #expect(diagnostics.diagnostics.isEmpty, "\(diagnostics.diagnostics)")
        return try #require(config)
    }

    /// Feeds `lines` and returns the events, with the last one flushed as the end of input would.
    static func assemble(_ assembler: inout MultilineAssembler, _ lines: [[UInt8]]) -> [String] {
        var events: [String] = []
        for line in lines {
            line.withUnsafeBufferPointer { line in
                assembler.feed(line, now: 0) { events.append(String(decoding: $0, as: UTF8.self)) }
            }
        }
        assembler.flush { events.append(String(decoding: $0, as: UTF8.self)) }
        return events
    }

    @Test func stackTracesBecomeOneEventEach() throws {
        var assembler = MultilineAssembler(try Self.config(#"{start_pattern: '^\d{4}-\d{2}-\d{2}'}"#))
        let lines = [
            "  orphan continuation", "2026-11-30 12:00:00 ERROR boom", "java.lang.IllegalStateException: x",
            "\tat com.example.A.run(A.java:10)", "2026-11-30 12:00:01 INFO fine", "2026-11-30 12:00:02 ERROR again",
            "Traceback (most recent call last):", "  File \"app.py\", line 3, in <module>",
        ].map { Array($0.utf8) }
        #expect(
            Self.assemble(&assembler, lines) == [
                "  orphan continuation",
                "2026-11-30 12:00:00 ERROR boom\njava.lang.IllegalStateException: x\n\tat com.example.A.run(A.java:10)",
                "2026-11-30 12:00:01 INFO fine",
                "2026-11-30 12:00:02 ERROR again\nTraceback (most recent call last):\n  File \"app.py\", line 3, in <module>",
            ])
        #expect(assembler.joinedLines == 4)
        #expect(assembler.cuts == 0)
        #expect(!assembler.isHolding)
    }

    /// At max_lines the event is emitted and the next continuation begins a new one: a cut, counted, and no
    /// line lost. A line that is not valid UTF-8 cannot match, so it continues the event.
    @Test func limitsCutWithoutLosingLines() throws {
        var assembler = MultilineAssembler(
            try Self.config(#"{start_pattern: '^START', max_lines: 3, max_bytes: 1024}"#))
        var lines = ["START 1", "a", "b", "c", "d", "START 2"].map { Array($0.utf8) }
        lines.insert([0x78, 0xFF, 0xFE], at: 2)
        let events = Self.assemble(&assembler, lines)
        #expect(events == ["START 1\na\nx\u{FFFD}\u{FFFD}", "b\nc\nd", "START 2"])
        #expect(assembler.cuts == 1)
        var bytesLimited = MultilineAssembler(try Self.config(#"{start_pattern: '^S', max_bytes: 1024}"#))
        let long = Array(repeating: UInt8(ascii: "x"), count: 600)
        #expect(Self.assemble(&bytesLimited, [Array("S".utf8), long, long]).map(\.utf8.count) == [602, 600])
        #expect(bytesLimited.cuts == 1)
    }

    @Test func theTimeoutIsMeasuredFromTheLastLine() throws {
        var assembler = MultilineAssembler(try Self.config(#"{start_pattern: '^S', timeout_ms: 250}"#))
        #expect(assembler.deadlineNanos == nil)
        Array("S".utf8).withUnsafeBufferPointer { assembler.feed($0, now: 1_000_000_000) { _ in } }
        #expect(assembler.deadlineNanos == 1_250_000_000)
        Array("more".utf8).withUnsafeBufferPointer { assembler.feed($0, now: 1_100_000_000) { _ in } }
        #expect(assembler.deadlineNanos == 1_350_000_000)
    }

    @Test func mistakesAreConfigErrorsAtTheirPlace() throws {
        for (yaml, message) in [
            ("{max_lines: 5}", "'multiline' has no 'start_pattern'"),
            ("{start_pattern: '(x'}", "invalid regular expression in 'start_pattern': missing closing parenthesis"),
            ("{start_pattern: x, max_lines: 1}", "'max_lines' must be between 2 and 1000000, found 1"),
            ("{start_pattern: x, timeout: 5}", "unknown key 'timeout'"),
        ] {
            let diagnostics = DiagnosticLog()
            let root = try #require(try YAMLParser.parse(yaml))
            #expect(
                MultilineConfig.read(ConfigNode(root, name: "'multiline'", log: diagnostics, environment: [:])) == nil)
            #expect(diagnostics.diagnostics.contains { $0.message.hasPrefix(message) }, "\(diagnostics.diagnostics)")
        }
    }
}
