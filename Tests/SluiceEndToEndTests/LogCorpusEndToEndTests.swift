import Foundation
import SluiceCore
import Testing

/// The `parse_*` functions through the real binary on a generated corpus of real-looking lines
/// (`Peers/log_corpus.py`): access logs as nginx and Apache write them (IPv6 hosts, zones, escaped agents, TLS
/// bytes on a plain port), RFC 5424 syslog with structured data and its escapes, RFC 3164 syslog from hosts and
/// network devices, logfmt as Go writes it, CSV as Python's csv module writes it, named captures as Python's re
/// finds them, and access-log times. The script builds each line from fields it chose first; the test checks that
/// each line parses to exactly those fields and that each broken line is an `error`, counted.
@Suite(.serialized, .blocking)
struct LogCorpusEndToEndTests {
    static let script = SluiceProcess.repository.appendingPathComponent(
        "Tests/SluiceEndToEndTests/Peers/log_corpus.py")

    struct Case: Sendable {
        var name: String
        var expression: String
        var lines: [String]
        var expected: [JSONValue]
    }

    /// What the script writes when run with `arguments`.
    static func runScript(_ arguments: [String]) throws -> JSONValue {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script.path] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return try JSONReader.parse(String(decoding: data, as: UTF8.self))
    }

    /// The corpus: `count` lines per case from seed `seed`; RFC 3164 times are read relative to now.
    static func corpus(seed: Int, count: Int) throws -> [Case] {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        guard case .array(let cases) = try runScript([String(seed), String(count), String(now)]) else { return [] }
        return cases.compactMap { value in
            guard case .string(let name)? = value["name"], case .string(let expression)? = value["expression"],
                case .array(let lines)? = value["lines"], case .array(let expected)? = value["expected"]
            else { return nil }
            return Case(
                name: name, expression: expression,
                lines: lines.compactMap { if case .string(let line) = $0 { line } else { nil } }, expected: expected)
        }
    }

    /// `value` with every object's keys in sorted order, so that objects compare by their fields alone.
    static func sorted(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let object):
            return .object(
                JSONObject(
                    uniqueFields: object.fields.sorted { $0.key < $1.key }.map {
                        JSONObject.Field(key: $0.key, value: sorted($0.value))
                    }))
        case .array(let values): return .array(values.map(sorted))
        default: return value
        }
    }

    /// 20,000 application records (10 MB: many reads of stdin), some with Java or Python stack traces longer than
    /// `max_lines`, some with lines of several KiB: every record comes out as the events the README's rules give,
    /// in order, with the cuts and joined lines counted.
    @Test func multilineRecordsComeOutWholeAcrossReads() throws {
        let corpus = try Self.runScript(["multiline", "11", "20000"])
        guard case .string(let input)? = corpus["input"], case .array(let expected)? = corpus["events"],
            let cuts = corpus.int("cuts"), let joined = corpus.int("joined")
        else {
            Issue.record("the corpus script wrote no corpus")
            return
        }
        let pipeline = try TemporaryPipeline(
            #"""
            sources:
              in:
                type: stdin
                decoding: text
                multiline: {start_pattern: '^\d{4}-\d{2}-\d{2} ', max_lines: 40, max_bytes: 4096, timeout_ms: 600000}
            sinks:
              out: {type: stdout, inputs: [in]}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """#)
        defer { pipeline.remove() }
        let result = try SluiceProcess.run(["run", pipeline.path], stdin: input)
        #expect(result.status == 0, "\(result.errors.prefix(2000))")
        let messages = try result.output.split(separator: "\n").map { try JSONReader.parse(String($0))["message"] }
        #expect(messages.count == expected.count)
        if let first = messages.indices.first(where: { $0 < expected.count && messages[$0] != expected[$0] }) {
            Issue.record(
                """
                event \(first) differs:
                  expected \(JSONWriter.string(expected[first]).prefix(300))
                  found    \(messages[first].map { JSONWriter.string($0) }?.prefix(300) ?? "no message")
                """)
        }
        let source = try #require(try pipeline.finalComponent("in"))
        #expect(source.int("received_events_total") == expected.count)
        #expect(source.int("multiline", "events_cut_total") == cuts)
        #expect(source.int("multiline", "lines_joined_total") == joined)
        #expect(cuts > 1_000 && joined > 100_000, "the corpus exercises the limits")
    }

    @Test func everyGeneratedLineParsesToTheFieldsItWasMadeOf() throws {
        let cases = try Self.corpus(seed: 17, count: 2_000)
        #expect(cases.count == 15)
        for corpusCase in cases {
            let pipeline = try TemporaryPipeline(
                """
                sources:
                  in: {type: stdin, decoding: text}
                transforms:
                  parsed:
                    type: map
                    inputs: [in]
                    set:
                      parsed: '\(corpusCase.expression.replacingOccurrences(of: "'", with: "''"))'
                sinks:
                  out: {type: stdout, inputs: [parsed]}
                metrics: {interval_secs: 0, to: "$METRICS", format: json}
                """)
            defer { pipeline.remove() }
            let result = try SluiceProcess.run(
                ["run", pipeline.path], stdin: corpusCase.lines.joined(separator: "\n") + "\n")
            #expect(result.status == 0, "\(corpusCase.name): \(result.errors.prefix(2000))")
            var parsed: [String: JSONValue] = [:]
            for line in result.output.split(separator: "\n") {
                let event = try JSONReader.parse(String(line))
                guard case .string(let message)? = event["message"], let value = event["parsed"] else {
                    Issue.record("\(corpusCase.name): an output without message or parsed: \(line)")
                    continue
                }
                parsed[message] = value
            }
            var mismatches = 0
            var broken = 0
            for (line, expected) in zip(corpusCase.lines, corpusCase.expected) {
                guard expected != .null else {
                    broken += 1
                    #expect(parsed[line] == nil, "\(corpusCase.name): a broken line parsed: \(line)")
                    continue
                }
                let found = parsed[line].map(Self.sorted)
                if found != Self.sorted(expected) {
                    mismatches += 1
                    // The first few in full; the count says how many more.
                    if mismatches <= 5 {
                        Issue.record(
                            """
                            \(corpusCase.name): \(line)
                              expected \(JSONWriter.string(Self.sorted(expected)))
                              found    \(found.map { JSONWriter.string($0) } ?? "nothing (discarded)")
                            """)
                    }
                }
            }
            #expect(mismatches == 0, "\(corpusCase.name): \(mismatches) of \(corpusCase.lines.count) lines differ")
            #expect(broken > 0)
            let map = try #require(try pipeline.finalComponent("parsed"))
            #expect(map.int("discarded_events_total", "error") == broken, "\(corpusCase.name)")
            #expect(map.int("sent_events_total") == corpusCase.lines.count - broken, "\(corpusCase.name)")
            #expect(map.balances)
        }
    }
}
