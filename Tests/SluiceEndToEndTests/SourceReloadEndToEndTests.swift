import Dispatch
import Foundation
import SluiceCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A reload that gives a running source new options: the source stops and hands its place in its input to one
/// made from the new options, so that no event is lost or read twice.
@Suite(.blocking)
struct SourceReloadEndToEndTests {
    /// The first index whose number is not the index, if any.
    static func firstWrong(_ numbers: [Int]) -> Int? {
        numbers.indices.first { numbers[$0] != $0 }
    }

    /// Writes `yaml` over the pipeline file and sends SIGHUP; returns once the reload said `message`.
    func reload(_ child: SluiceProcess, _ pipeline: TemporaryPipeline, to yaml: String, expecting message: String)
        throws
    {
        try ReloadEndToEndTests().rewrite(pipeline, yaml)
        kill(child.process.processIdentifier, SIGHUP)
        #expect(child.waitForErrorText(message), "\(child.errorText)")
    }

    /// Standard input is never read twice: 400,000 lines through a `block` pipeline, and half-way, with the pipe,
    /// the read-ahead and the buffers full, `decoding` changes from json to text. Every line comes out once and
    /// whole, in order: each before the cut as its JSON, each after it as a text message, none split where the old
    /// source stopped reading.
    @Test func stdinGoesOnWhereTheOldOptionsStopped() throws {
        let yaml = { (decoding: String) in
            """
            sources: {in: {type: stdin, decoding: \(decoding)}}
            sinks: {out: {type: stdout, inputs: [in], buffer: {max_events: 1000, when_full: block}}}
            metrics: {interval_secs: 0, to: $METRICS, format: json}
            """
        }
        let total = 400_000
        let pipeline = try TemporaryPipeline(yaml("json"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        defer { child.killIfRunning() }
        let reloaded = ReloadEndToEndTests.feedInHalves(child, total: total)
        var output = Data()
        while output.count < 100_000, let chunk = child.readChunk() { output.append(chunk) }
        try reload(child, pipeline, to: yaml("text"), expecting: "reload (SIGHUP): applied: replaced 'in'")
        reloaded.signal()
        output.append(child.readAllOutput())
        #expect(child.waitForExit() == 0, "\(child.errorText)")

        var numbers: [Int] = []
        var firstText: Int?
        var unexpected: [Substring] = []
        for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
            if line.hasPrefix("{\"n\":"), firstText == nil, let n = Int(line.dropFirst(5).dropLast()) {
                numbers.append(n)
            } else if line.hasPrefix("{\"message\":\"{\\\"n\\\":"), let n = Int(line.dropFirst(19).dropLast(3)) {
                if firstText == nil { firstText = numbers.count }
                numbers.append(n)
            } else {
                unexpected.append(line)
            }
        }
        #expect(
            unexpected.isEmpty, "lines neither whole JSON before the cut nor whole text after: \(unexpected.prefix(3))")
        // Compared as a whole, not by #expect on the arrays: the difference of two long arrays takes minutes to show.
        let exact = numbers == Array(0..<total)
        #expect(exact, "every line once, in order: \(numbers.count) lines, first wrong at \(Self.firstWrong(numbers))")
        let cut = try #require(firstText, "no line came through the new options")
        #expect(cut > 1_000 && cut < total / 2 + 1_000, "the cut came half-way: \(cut)")
        let source = try #require(try pipeline.finalComponent("in"))
        #expect(source.int("received_events_total") == total)
        #expect(source.int("sent_events_total") == total)
        #expect(source.balances)
    }

    /// A followed file is not read twice or skipped: half of its lines are read, `path_field` is added, the other
    /// half is appended; every line comes out once, those after the change with the path, and the checkpoint
    /// ends where the file does.
    @Test func aFileSourceGoesOnFromItsOffsets() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-reload-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appendingPathComponent("app.log").path
        let yaml = { (extra: String) in
            """
            sources:
              app: {type: file, include: [\(log)], decoding: json, data_dir: \(directory.path)\(extra)}
            sinks: {out: {type: stdout, inputs: [app]}}
            metrics: {interval_secs: 0, to: $METRICS, format: json}
            """
        }
        let half = 50_000
        try ReloadEndToEndTests.lines(0..<half).write(to: URL(fileURLWithPath: log))
        let pipeline = try TemporaryPipeline(yaml(""))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        defer { child.killIfRunning() }
        var output = Data()
        func lineCount() -> Int { output.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) } }
        while output.count < 100_000, let chunk = child.readChunk() { output.append(chunk) }
        try reload(child, pipeline, to: yaml(", path_field: file"), expecting: "applied: replaced 'app'")
        let appended = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try appended.seekToEnd()
        try appended.write(contentsOf: ReloadEndToEndTests.lines(half..<2 * half))
        try appended.close()
        while lineCount() < 2 * half, let chunk = child.readChunk() { output.append(chunk) }
        kill(child.process.processIdentifier, SIGTERM)
        output.append(child.readAllOutput())
        #expect(child.waitForExit() == 0, "\(child.errorText)")

        var numbers: [Int] = []
        var withPath = 0
        for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
            let event = try JSONReader.parse(String(line))
            if let n = event.int("n") { numbers.append(n) }
            if event["file"] == .string(log) {
                withPath += 1
            } else {
                #expect(withPath == 0, "a line without the path after the change: \(line)")
            }
        }
        let exact = numbers == Array(0..<2 * half)
        #expect(exact, "every line once, in order: \(numbers.count) lines, first wrong at \(Self.firstWrong(numbers))")
        #expect(withPath >= half && withPath < 2 * half, "\(withPath) lines with the path")
        let checkpoints = try String(
            contentsOf: directory.appendingPathComponent("app.checkpoints.json"), encoding: .utf8)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: log)[.size] as? Int)
        let compact = checkpoints.filter { !$0.isWhitespace }
        #expect(compact.contains("\"offset\":\(size)"), "\(checkpoints)")
    }

    /// A WebSocket server given another `decoding` listens anew (on a new port here, as it asked for port 0): what
    /// its first clients sent came through as JSON, what later ones send as text.
    @Test func aWebSocketServerListensAnewWithItsNewOptions() throws {
        let yaml = { (decoding: String) in
            """
            sources: {clients: {type: websocket_server, listen: 127.0.0.1:0, decoding: \(decoding)}}
            sinks: {out: {type: stdout, inputs: [clients]}}
            metrics: {interval_secs: 0, to: $METRICS, format: json}
            """
        }
        let pipeline = try TemporaryPipeline(yaml("json"))
        defer { pipeline.remove() }
        let (child, port) = try SluiceProcess.serving(pipeline)
        defer { child.killIfRunning() }
        var lines: [String] = []
        var partial = Data()
        let first = try WebSocketPeer("client", ["--url", "ws://127.0.0.1:\(port)/", "--send", "--messages", "100"])
        defer { first.stop() }
        FileSourceEndToEndTests.readLines(child, until: 100, into: &lines, &partial)
        try reload(child, pipeline, to: yaml("text"), expecting: "applied: replaced 'clients'")
        let announcement = "listening on ws://127.0.0.1:"
        #expect(child.waitForErrorText(announcement, times: 2), "\(child.errorText)")
        let newPort = try #require(
            Int(child.errorText.components(separatedBy: announcement).last!.prefix { $0.isNumber }))
        let second = try WebSocketPeer(
            "client", ["--url", "ws://127.0.0.1:\(newPort)/", "--send", "--messages", "100"])
        defer { second.stop() }
        FileSourceEndToEndTests.readLines(child, until: 200, into: &lines, &partial)
        kill(child.process.processIdentifier, SIGTERM)
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0, "\(child.errorText)")
        #expect(lines.count == 200)
        #expect(lines.prefix(100).allSatisfy { $0.hasPrefix("{\"n\":") }, "\(lines.prefix(3))")
        #expect(lines.suffix(100).allSatisfy { $0.hasPrefix("{\"message\":\"{\\\"n\\\": ") }, "\(lines.suffix(3))")
        let source = try #require(try pipeline.finalComponent("clients"))
        #expect(source.int("received_events_total") == 200)
        #expect(source.balances)
    }

    /// A simulator given another rate goes on with the same fleet: every device's `seq` runs on without a gap or
    /// repeat, the virtual clock does not jump back, and `count` counts the readings of both.
    @Test func aSimulatorKeepsItsFleetAndCount() throws {
        let yaml = { (rate: String) in
            """
            sources: {sim: {type: simulator, devices: 5, rate: \(rate), count: 30000, seed: 11, start_time: "2026-01-01T00:00:00Z"}}
            sinks: {out: {type: stdout, inputs: [sim]}}
            metrics: {interval_secs: 0, to: $METRICS, format: json}
            """
        }
        let pipeline = try TemporaryPipeline(yaml("3000"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        defer { child.killIfRunning() }
        var output = Data()
        while output.count < 20_000, let chunk = child.readChunk() { output.append(chunk) }
        try reload(child, pipeline, to: yaml("max"), expecting: "applied: replaced 'sim'")
        output.append(child.readAllOutput())
        #expect(child.waitForExit() == 0, "\(child.errorText)")

        let readings = try String(decoding: output, as: UTF8.self).split(separator: "\n").map {
            try JSONReader.parse(String($0))
        }
        #expect(readings.count == 30_000)
        var nextSeq: [String: Int] = [:]
        var lastTime = ""
        var violations: [String] = []
        for reading in readings {
            guard let device = reading["device"]?.stringValue, let seq = reading.int("seq"),
                let time = reading["ts"]?.stringValue
            else {
                violations.append("not a reading: \(reading)")
                continue
            }
            if seq != nextSeq[device, default: 0] { violations.append("\(device) seq \(seq)") }
            if time < lastTime { violations.append("time went back: \(lastTime) -> \(time)") }
            nextSeq[device] = seq + 1
            lastTime = time
        }
        #expect(violations.isEmpty, "\(violations.count): \(violations.prefix(3))")
        #expect(nextSeq.count == 5)
    }
}
