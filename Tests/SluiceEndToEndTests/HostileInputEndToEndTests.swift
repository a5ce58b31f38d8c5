import Foundation
import SluiceCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// One hostile input and what must become of it.
struct HostileCase: Sendable {
    enum Outcome: Sendable, Equatable {
        /// Delivered as this output line.
        case event(String)
        /// Counted under this discard cause.
        case discarded(String)
    }

    let name: String
    let bytes: [UInt8]
    let outcome: Outcome

    init(_ name: String, _ bytes: [UInt8], _ outcome: Outcome) {
        self.name = name
        self.bytes = bytes
        self.outcome = outcome
    }

    init(_ name: String, _ text: String, _ outcome: Outcome) {
        self.init(name, Array(text.utf8), outcome)
    }

    /// Cases whose content is the same whether it arrives as a stdin line or as a WebSocket message.
    static let jsonContent: [HostileCase] = [
        HostileCase(
            "invalid UTF-8 in a string", [0x7B, 0x22, 0x73, 0x22, 0x3A, 0x22, 0xFF, 0xFE, 0x22, 0x7D],
            .discarded("parse_error")),
        HostileCase("invalid UTF-8 outside a string", [0xC3, 0x28], .discarded("parse_error")),
        HostileCase(
            "an overlong encoding of '/'", Array(#"{"s":""#.utf8) + [0xC0, 0xAF, 0x22, 0x7D], .discarded("parse_error")),
        HostileCase(
            "an encoded surrogate", Array(#"{"s":""#.utf8) + [0xED, 0xA0, 0x80, 0x22, 0x7D], .discarded("parse_error")),
        HostileCase("a NUL byte after the value", Array(#"{"a":1}"#.utf8) + [0], .discarded("parse_error")),
        HostileCase(
            "a raw NUL byte in a string", Array(#"{"s":"a"#.utf8) + [0] + Array(#"b"}"#.utf8), .discarded("parse_error")
        ),
        HostileCase("an escaped NUL", #"{"s":"\u0000"}"#, .event(#"{"s":"\u0000"}"#)),
        HostileCase(
            "a byte-order mark inside the stream", [0xEF, 0xBB, 0xBF] + Array(#"{"bom":2}"#.utf8),
            .discarded("parse_error")),
        HostileCase("whitespace only", " \t ", .discarded("parse_error")),
        HostileCase("a number too large for a double", #"{"n":1e999}"#, .discarded("parse_error")),
        HostileCase("a number too small for a double", #"{"n":-1e999}"#, .discarded("parse_error")),
        HostileCase("a number below the smallest double", #"{"n":1e-999}"#, .event(#"{"n":0.0}"#)),
        HostileCase("minus zero", #"{"n":-0}"#, .event(#"{"n":0}"#)),
        HostileCase("minus zero as a double", #"{"n":-0.0}"#, .event(#"{"n":-0.0}"#)),
        HostileCase(
            "a 30-digit integer", #"{"n":123456789012345678901234567890}"#, .event(#"{"n":1.2345678901234568e+29}"#)),
        HostileCase("the largest 64-bit integer", #"{"n":9223372036854775807}"#, .event(#"{"n":9223372036854775807}"#)),
        HostileCase("a lone high surrogate", #"{"s":"\ud800"}"#, .event("{\"s\":\"\u{FFFD}\"}")),
        HostileCase("a lone low surrogate", #"{"s":"\udc00x"}"#, .event("{\"s\":\"\u{FFFD}x\"}")),
        HostileCase("a surrogate pair", #"{"s":"\ud83d\ude00"}"#, .event("{\"s\":\"\u{1F600}\"}")),
        HostileCase("duplicate keys: the last wins", #"{"d":1,"e":0,"d":2}"#, .event(#"{"d":2,"e":0}"#)),
        HostileCase(
            "100,000 nested arrays", String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000),
            .discarded("parse_error")),
        HostileCase(
            "100,000 nested objects",
            String(repeating: #"{"a":"#, count: 100_000) + String(repeating: "}", count: 100_000),
            .discarded("parse_error")),
        HostileCase("a truncated object", #"{"a":"#, .discarded("parse_error")),
        HostileCase("a trailing comma", #"[1,2,]"#, .discarded("parse_error")),
        HostileCase("two values on one line", #"{"a":1} {"b":2}"#, .discarded("parse_error")),
        HostileCase("a bare scalar", "42", .event("42")),
        HostileCase("control characters escaped", #"{"s":"\b\f\n\r\t\u001f"}"#, .event(#"{"s":"\b\f\n\r\t\u001f"}"#)),
    ]

    /// Cases that only a line-oriented input has.
    static let lineContent: [HostileCase] = [
        HostileCase("a CRLF line end", "{\"crlf\":1}\r", .event(#"{"crlf":1}"#)),
        HostileCase("an empty line", "", .discarded("parse_error")),
        HostileCase("a line of 50 MB", Array(repeating: UInt8(ascii: "x"), count: 50 << 20), .discarded("oversize")),
    ]
}

/// The hostile-input corpus through the real binary: every case ends with exit 0, the good events around the bad
/// ones delivered in order, and each bad one counted under its cause in the final metrics.
@Suite(.serialized, .blocking)
struct HostileInputEndToEndTests {
    /// A good event between the cases, so that a case swallowing its neighbour shows.
    static func good(_ index: Int) -> String { #"{"good":\#(index)}"# }

    /// The stream: a byte-order mark and a good event first, then each case followed by a good event, and a last
    /// good event without a newline. Returns the input and the output lines expected.
    static func stream(_ cases: [HostileCase]) -> (input: [UInt8], expected: [String]) {
        var input: [UInt8] = [0xEF, 0xBB, 0xBF] + Array(good(0).utf8) + [0x0A]
        var expected = [good(0)]
        for (index, hostile) in cases.enumerated() {
            input += hostile.bytes + [0x0A] + Array(good(index + 1).utf8) + [0x0A]
            if case .event(let line) = hostile.outcome { expected.append(line) }
            expected.append(good(index + 1))
        }
        input += Array(#"{"last":"no newline"}"#.utf8)
        expected.append(#"{"last":"no newline"}"#)
        return (input, expected)
    }

    /// Runs stdin (with `decoding`) -> stdout on `input`; returns the process after exit, its stdout and the
    /// pipeline (to read the metrics from; the caller removes it).
    func runStdin(decoding: String, input: [UInt8]) throws -> (
        child: SluiceProcess, output: String, pipeline: TemporaryPipeline
    ) {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              in: {type: stdin, decoding: \(decoding)}
            sinks:
              out: {type: stdout, inputs: [in]}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        let data = Data(input)
        child.feed { index in
            let start = index << 20
            return start < data.count ? data[start..<min(data.count, start + (1 << 20))] : nil
        }
        let output = String(decoding: child.readAllOutput(), as: UTF8.self)
        #expect(child.waitForExit() == 0)
        return (child, output, pipeline)
    }

    @Test func theStdinCorpusIsDeliveredOrCountedCaseByCase() throws {
        let cases = HostileCase.jsonContent + HostileCase.lineContent
        let (input, expected) = Self.stream(cases)
        let (child, output, pipeline) = try runStdin(decoding: "json", input: input)
        defer { pipeline.remove() }
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.last == "", "the output ends with a whole line")
        let delivered = Array(lines.dropLast())
        #expect(delivered == expected)
        for (got, want) in zip(delivered, expected) where got != want {
            Issue.record("got \(got.prefix(200)), expected \(want.prefix(200))")
            break
        }

        let source = try #require(try pipeline.finalComponent("in"))
        #expect(source.int("received_events_total") == 2 * cases.count + 2)
        for cause in ["parse_error", "oversize"] {
            let count = cases.filter { $0.outcome == .discarded(cause) }.count
            #expect(source.int("discarded_events_total", cause) == count, "\(cause)")
        }
        #expect(source.balances)
        let rss = try #require(try pipeline.reports().last?.int("process", "max_rss_bytes"))
        #expect(underSanitizer || rss < 100 << 20, "a 50 MB line must not be held in memory (peak RSS \(rss) bytes)")
        // The first bad lines are named on stderr with their line numbers (the rest are summarised).
        #expect(child.errorText.contains("in: line 2 is not valid JSON (invalid UTF-8 in a string"))
        #expect(child.errorText.contains("in: line 10 is not valid JSON (unexpected byte 0x00 after the JSON value"))
        #expect(child.errorText.contains("more bad lines; see the metrics"))
    }

    @Test func theTextDecodingKeepsEveryLineAndRepairsItsEncoding() throws {
        let cases = [
            HostileCase("invalid UTF-8", [0x61, 0xFF, 0x62], .event("{\"message\":\"a\u{FFFD}b\"}")),
            HostileCase("a NUL byte", [0x61, 0x00, 0x62], .event(#"{"message":"a\u0000b"}"#)),
            HostileCase("a CRLF line end", "crlf\r", .event(#"{"message":"crlf"}"#)),
            HostileCase("an empty line", "", .event(#"{"message":""}"#)),
            HostileCase("quotes and backslashes", #"say "hi" \ bye"#, .event(#"{"message":"say \"hi\" \\ bye"}"#)),
            HostileCase(
                "a line of 50 MB", Array(repeating: UInt8(ascii: "x"), count: 50 << 20), .discarded("oversize")),
        ]
        let (input, rawExpected) = Self.stream(cases)
        // Every line is text here, so the good lines come out as messages too.
        let expected = rawExpected.map { line in
            line.hasPrefix("{\"good\"") || line.hasPrefix("{\"last\"")
                ? JSONWriter.string(.object(JSONObject(uniqueFields: [.init(key: "message", value: .string(line))])))
                : line
        }
        let (_, output, pipeline) = try runStdin(decoding: "text", input: input)
        defer { pipeline.remove() }
        #expect(output.split(separator: "\n").map(String.init) == expected)
        let source = try #require(try pipeline.finalComponent("in"))
        #expect(source.int("discarded_events_total", "oversize") == 1)
        #expect(source.balances)
    }

    /// The WebSocket peer in its `frames` mode, sending these frames (opcode 1 for text, 2 for binary, each in so
    /// many fragments) on its first connection, and the listing it reads them from then (remove it after the test).
    static func framesPeer(_ frames: [(bytes: [UInt8], opcode: Int, fragments: Int)]) throws
        -> (peer: WebSocketPeer, listing: URL)
    {
        let listing = FileManager.default.temporaryDirectory.appendingPathComponent("frames-\(UUID().uuidString).jsonl")
        try frames.map { frame in
            let hex = frame.bytes.map { String(format: "%02x", $0) }.joined()
            return #"{"hex":"\#(hex)","opcode":\#(frame.opcode),"fragments":\#(frame.fragments)}"#
        }.joined(separator: "\n").write(to: listing, atomically: true, encoding: .utf8)
        return (try WebSocketPeer("frames", ["--frames", listing.path]), listing)
    }

    @Test func theWebSocketCorpusIsDeliveredOrCountedMessageByMessage() throws {
        // Each case a message between good ones, every third one in three fragments; last, a 2 MiB message over
        // the 1 MiB limit, fragmented, after which the client must reconnect.
        let cases = HostileCase.jsonContent
        var frames: [(bytes: [UInt8], fragments: Int)] = [(Array(Self.good(0).utf8), 1)]
        var expected = [Self.good(0)]
        for (index, hostile) in cases.enumerated() {
            frames.append((hostile.bytes, index % 3 == 2 ? 3 : 1))
            frames.append((Array(Self.good(index + 1).utf8), 1))
            if case .event(let line) = hostile.outcome { expected.append(line) }
            expected.append(Self.good(index + 1))
        }
        frames.append((Array(repeating: UInt8(ascii: "x"), count: 2 << 20), 4))
        expected.append(#"{"reconnected":1}"#)
        // Binary now and then; invalid UTF-8 in text frames too.
        let (peer, listing) = try Self.framesPeer(
            frames.enumerated().map { index, frame in (frame.bytes, index % 5 == 4 ? 2 : 1, frame.fragments) })
        defer {
            peer.stop()
            try? FileManager.default.removeItem(at: listing)
        }
        let pipeline = try TemporaryPipeline(
            """
            sources:
              feed:
                type: websocket
                url: ws://127.0.0.1:\(peer.port)/
                max_message_bytes: 1048576
                reconnect: {initial_delay_ms: 100, max_delay_ms: 400}
            sinks:
              out: {type: stdout, inputs: [feed]}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed { _ in nil }
        var output = Data()
        while output.count(where: { $0 == UInt8(ascii: "\n") }) < expected.count, let chunk = child.readChunk() {
            output.append(chunk)
        }
        kill(child.process.processIdentifier, SIGTERM)
        output.append(child.readAllOutput())
        #expect(child.waitForExit() == 0)
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines == expected)

        let source = try #require(try pipeline.finalComponent("feed"))
        #expect(
            source.int("discarded_events_total", "parse_error")
                == cases.filter { $0.outcome == .discarded("parse_error") }.count)
        #expect(source.int("discarded_events_total", "oversize") == 1)
        #expect(source.balances)
        #expect(child.errorText.contains("a message is not valid JSON (invalid UTF-8 in a string"))
    }

    /// One message of a million numbers with `split_arrays`: its events go on a batch at a time as they are made.
    /// Made all at once (with the array they came from alive beside them), they took 330 MB for two million, so a
    /// message within the default 16 MiB limit could take over a gigabyte.
    @Test func aLargeSplitArrayGoesOnInBatches() throws {
        let count = 1_000_000
        let message = Array(("[" + Array(repeating: "7", count: count).joined(separator: ",") + "]").utf8)
        let (peer, listing) = try Self.framesPeer([(message, 1, 4)])
        defer {
            peer.stop()
            try? FileManager.default.removeItem(at: listing)
        }
        let pipeline = try TemporaryPipeline(
            """
            sources:
              feed: {type: websocket, url: "ws://127.0.0.1:\(peer.port)/", split_arrays: true}
            sinks:
              out: {type: blackhole, inputs: [feed]}
            metrics: {interval_secs: 0.2, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        defer { child.killIfRunning() }
        #expect(pipeline.waitForReport("out") { $0.int("sent_events_total") == count })
        kill(child.process.processIdentifier, SIGTERM)
        #expect(child.waitForExit() == 0)
        let source = try #require(try pipeline.finalComponent("feed"))
        #expect(source.int("received_events_total") == count && source.balances)
        // 52 MiB here (debug build), 172 MiB when the events were made at once; a sanitizer's memory is its own.
        let rss = try #require(try pipeline.reports().last?.int("process", "max_rss_bytes"))
        #expect(underSanitizer || rss < 100 << 20, "max RSS \(rss >> 20) MiB")
    }
}
