import Foundation
import SluiceCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The runtime support of stateful transforms through the real binary: windows that close on the clock while
/// events still flow, the final partial window at SIGTERM, the ledger of folded and created events, and the
/// latest-per-key buffer in front of a slow reader.
@Suite(.serialized, .blocking)
struct StatefulRuntimeEndToEndTests {
    @Test func processingTimeWindowsCloseOnTheClockAndAStopEmitsThePartialOne() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              sim: {type: simulator, devices: 2, rate: 200, seed: 5}
            transforms:
              per_second:
                type: aggregate
                inputs: [sim]
                group_by: [.device]
                window: {type: tumbling, size_secs: 1}
                aggregations: {readings: count()}
            sinks:
              out: {type: stdout, inputs: [per_second]}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed { _ in nil }
        // Windows close on the wall clock while the simulator runs: lines come before any stop.
        var output = ""
        let deadline = Date().addingTimeInterval(10)
        while output.split(separator: "\n").count < 4, Date() < deadline {
            if let chunk = child.readChunkIfAvailable(waitingMillis: 200) {
                output += String(decoding: chunk, as: UTF8.self)
            }
        }
        #expect(output.split(separator: "\n").count >= 4, "two windows of two devices closed on the clock")
        // Stop in the middle of the next window (the clock is what is tested here): it is open, half full.
        let closed = try output.split(separator: "\n").map { try JSONReader.parse(String($0)) }
        let closedEnd = try #require(closed.last?["window_end"]?.stringValue.flatMap(RFC3339.parse))
        while WallClock.nowMillis() < closedEnd + 500 { usleep(10_000) }
        kill(child.process.processIdentifier, SIGTERM)
        output += String(decoding: child.readAllOutput(), as: UTF8.self)
        #expect(child.waitForExit() == 0)
        let rows = try output.split(separator: "\n").map { try JSONReader.parse(String($0)) }
        // The window open at the stop (one or both devices had readings in it) is emitted and marked partial; the
        // windows before it closed on the clock, complete.
        let lastEnd = try #require(rows.last?["window_end"])
        #expect(lastEnd != closed.last?["window_end"], "the window open at the stop was emitted")
        #expect(rows.allSatisfy { ($0["partial"] == true) == ($0["window_end"] == lastEnd) }, "\(rows)")
        let counted = rows.reduce(0) { $0 + Int($1.int("readings") ?? 0) }
        let source = try #require(try pipeline.finalComponent("sim"))
        let aggregate = try #require(try pipeline.finalComponent("per_second"))
        #expect(counted == source.int("sent_events_total"), "every reading is in exactly one window")
        #expect(aggregate.int("folded_events_total") == source.int("sent_events_total"))
        #expect(aggregate.int("created_events_total") == rows.count)
        #expect(aggregate.int("sent_events_total") == rows.count)
        #expect(aggregate["state"]?.int("open_windows") == 0)
    }

    /// Keyed state costs a fixed size per key, whatever flows past it: 400,000 distinct keys through a dedupe
    /// limited to 100,000 keep the process small (each remembered key once cost kilobytes in freed, fragmented
    /// memory).
    @Test func keyedStateStaysSmallAtItsLimit() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              sim: {type: simulator, devices: 1000, rate: max, count: 400000, seed: 8}
            transforms:
              unique: {type: dedupe, inputs: [sim], fields: [.device, .seq], cache: {max_keys: 100000}}
            sinks:
              out: {type: blackhole, inputs: [unique]}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed { _ in nil }
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0)
        let dedupe = try #require(try pipeline.finalComponent("unique"))
        #expect(dedupe.int("sent_events_total") == 400_000, "every (device, seq) is new")
        #expect(dedupe["state"]?.int("state_keys") == 100_000)
        #expect(dedupe["state"]?.int("evicted_total") == 300_000)
        let rss = try #require(try pipeline.reports().last?.int("process", "max_rss_bytes"))
        #expect(underSanitizer || rss < 80 << 20, "peak RSS \(rss) bytes")
    }

    @Test func aLatestPerKeyBufferGivesASlowReaderEachKeysNewestValue() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              sim: {type: simulator, devices: 10, rate: max, count: 200000, seed: 6}
            sinks:
              out:
                type: stdout
                inputs: [sim]
                buffer: {max_events: 100, when_full: latest_per_key, key: .device}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed { _ in nil }
        // A reader that takes a little at a time, with pauses: stdout blocks, and the buffer keeps the newest.
        var output = Data()
        for _ in 0..<20 {
            guard let chunk = child.readChunk(limit: 4096) else { break }
            output.append(chunk)
            usleep(20_000)
        }
        output.append(child.readAllOutput())
        #expect(child.waitForExit() == 0)
        let rows = try String(decoding: output, as: UTF8.self).split(separator: "\n").map {
            try JSONReader.parse(String($0))
        }
        let sink = try #require(try pipeline.finalComponent("out"))
        let superseded = try #require(sink.int("discarded_events_total", "superseded"))
        #expect(superseded > 100_000, "most readings were replaced by newer ones of their device")
        #expect(sink.int("received_events_total") == 200_000)
        #expect(sink.int("sent_events_total") == rows.count)
        #expect(sink.balances)
        // Each device's last reading (seq 19,999: 200,000 readings over 10 devices) is delivered.
        var last: [String: Int] = [:]
        for row in rows { if let device = row["device"]?.stringValue { last[device] = row.int("seq") } }
        #expect(last.count == 10)
        #expect(last.values.allSatisfy { $0 == 19_999 }, "\(last)")
    }
}
