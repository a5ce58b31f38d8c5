import Foundation
import SluiceCore
import SluiceTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Seeded random pipelines through the real binary: one to six transforms of every kind (stateless ones fused into
/// the source and into each other, routes with all their outputs, fan-in, dedupe, sample, throttle, aggregate),
/// behind buffers of every policy (small `block`, `drop_newest` and `drop_oldest` buffers, `unbounded`,
/// `latest_per_key`), into `stdout` and `blackhole` sinks, over input with bad lines and bad values. Half of them
/// run to the end of their input, half are stopped with SIGTERM once the source has read part of it, while buffers
/// and windows hold events. Every one must end with status 0 and a final report in which every component's ledger
/// balances (received + created = sent + discarded + folded) and no buffer holds an event, with exactly as many
/// whole lines on stdout as the `stdout` sinks say they wrote.
@Suite(.serialized)
struct RandomPipelinesEndToEndTests {
    /// A pipeline made from `seed`: its text and the ids of its `stdout` sinks.
    static func pipeline(seed: UInt64) -> (yaml: String, stdoutSinks: [String]) {
        var random = SplitMix64(seed: seed)
        func pick<T>(_ choices: [T]) -> T { choices.randomElement(using: &random)! }
        func number(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }

        var readable = ["in"]
        var read: Set<String> = []
        var transforms: [String] = []
        for index in 0..<number(1...6) {
            let id = "t\(index)"
            let inputs = Array(readable.shuffled(using: &random).prefix(pick([1, 1, 1, 2])))
            read.formUnion(inputs)
            let type = pick(["filter", "map", "route", "dedupe", "sample", "throttle", "aggregate"])
            let options: String
            switch type {
            case "filter": options = "condition: '.v > \(number(0...9))'"
            case "map":
                options = pick([
                    "set: {w: '.v * 2'}", "set: {v: '.v + 1'}", "set: {s: 'string(.v)'}", "remove: [k]",
                    "set: {z: '.v / (.v - 3)'}",
                ])
            case "route": options = "routes: {a: '.v > \(number(0...9))', b: '.v % 2 == 0'}"
            case "dedupe": options = "fields: [.k, .v], cache: {max_keys: \(pick([1, 3, 100]))}"
            case "sample": options = "rate: \(number(1...4))" + pick(["", ", key: .k"])
            case "throttle": options = "max_events: \(number(1...50)), window_secs: 1" + pick(["", ", key: .k"])
            default:
                options =
                    "group_by: [.k], window: {type: tumbling, size_secs: 1}, time: {field: .ts}, "
                    + "aggregations: {n: count(), s: sum(.v)}"
            }
            let buffer = pick([
                "", "", "", "", ", buffer: unbounded",
                ", buffer: {max_events: \(pick([1, 2, 10, 1000])), when_full: \(pick(["block", "drop_newest", "drop_oldest"]))}",
                ", buffer: {max_events: \(pick([2, 50])), when_full: latest_per_key, key: .k}",
            ])
            transforms.append(
                "  \(id): {type: \(type), inputs: [\(inputs.joined(separator: ", "))], \(options)\(buffer)}")
            readable += type == "route" ? ["\(id).a", "\(id).b", "\(id)._unmatched"] : [id]
        }
        // Every output nothing reads goes to a sink (a route's `_unmatched` may be left unread: then discarded).
        var sinks: [String] = []
        var stdoutSinks: [String] = []
        for (index, output) in readable.enumerated() where output != "in" && !read.contains(output) {
            if output.hasSuffix("._unmatched"), number(0...1) == 0 { continue }
            let type = pick(["blackhole", "stdout"])
            if type == "stdout" { stdoutSinks.append("o\(index)") }
            sinks.append("  o\(index): {type: \(type), inputs: [\(output)]}")
        }
        let yaml = """
            sources:
              in: {type: stdin}
            transforms:
            \(transforms.joined(separator: "\n"))
            sinks:
            \(sinks.joined(separator: "\n"))
            metrics: {interval_secs: 0.1, to: "$METRICS", format: json}
            """
        return (yaml, stdoutSinks)
    }

    /// `count` events for `seed`: five keys, values 0 to 9, times a few milliseconds apart; about 1 % bad JSON and
    /// 2 % with a value that is not a number.
    static func input(seed: UInt64, count: Int) -> [String] {
        var random = SplitMix64(seed: seed ^ 0x5EED)
        var time = 1_796_040_000_000
        return (0..<count).map { _ in
            time += Int.random(in: 0...50, using: &random)
            let roll = Int.random(in: 0..<100, using: &random)
            if roll == 0 { return "not json" }
            let key = ["a", "b", "c", "d", "e"].randomElement(using: &random)!
            let value = roll < 3 ? "\"x\"" : String(Int.random(in: 0...9, using: &random))
            return #"{"k":"\#(key)","v":\#(value),"ts":\#(time)}"#
        }
    }

    @Test(arguments: 0..<40) func aRandomPipelineEndsBalanced(seed: UInt64) throws {
        let (yaml, stdoutSinks) = Self.pipeline(seed: seed)
        let pipeline = try TemporaryPipeline(yaml)
        defer { pipeline.remove() }
        let lines = Self.input(seed: seed, count: 20_000)
        let stopped = seed % 2 == 1
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        defer { child.killIfRunning() }
        var output = Data()
        if stopped {
            // The first part, then SIGTERM once the source has read all of it (stdin stays open).
            let first = 1_000 + Int(seed) * 400
            try child.input.fileHandleForWriting.write(
                contentsOf: Data((lines[..<first].joined(separator: "\n") + "\n").utf8))
            // Reading stdout meanwhile, so that a full pipe does not hold the pipeline up.
            var read = false
            let deadline = Date().addingTimeInterval(60)
            while !read, Date() < deadline {
                if let chunk = child.readChunkIfAvailable(waitingMillis: 50) { output.append(chunk) }
                read = pipeline.latest("in")?.int("received_events_total") == first
            }
            #expect(read, "the source read the first \(first) lines")
            kill(child.process.processIdentifier, SIGTERM)
        } else {
            let bytes = Data((lines.joined(separator: "\n") + "\n").utf8)
            child.feed { $0 == 0 ? bytes : nil }
        }
        output.append(child.readAllOutput())
        #expect(child.waitForExit() == 0, "\(child.errorText.suffix(600))\n\(yaml)")
        try? child.input.fileHandleForWriting.close()

        let report = try #require(try pipeline.reports().last, "\(yaml)")
        #expect(report["final"] == .bool(true))
        guard case .array(let components)? = report["components"] else {
            Issue.record("no components in the final report")
            return
        }
        for component in components {
            let id = component["component_id"] ?? nil
            #expect(component.balances, "\(String(describing: id)) balances in\n\(yaml)")
            #expect(component.int("buffer", "events") ?? 0 == 0, "\(String(describing: id)) holds nothing at the end")
        }
        let source = try #require(TemporaryPipeline.component("in", of: report))
        if !stopped { #expect(source.int("received_events_total") == lines.count) }
        let written = stdoutSinks.map { TemporaryPipeline.component($0, of: report)?.int("sent_events_total") ?? -1 }
        let outputLines = output.split(separator: UInt8(ascii: "\n"))
        #expect(outputLines.count == written.reduce(0, +), "stdout has as many lines as the stdout sinks wrote")
        #expect(output.isEmpty || output.last == UInt8(ascii: "\n"), "stdout ends with a whole line")
        for line in outputLines { #expect((try? JSONReader.parse(Array(line))) != nil) }
    }
}
