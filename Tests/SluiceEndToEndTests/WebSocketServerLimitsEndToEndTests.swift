import Foundation
import SluiceCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `websocket_server` components against clients that push their luck: every limit a remote peer could
/// exhaust has a default, is enforced, and is counted.
@Suite(.serialized, .blocking)
struct WebSocketServerLimitsEndToEndTests {
    @Test func clientsFramesAndHandshakesAreLimitedAndCounted() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              in:
                type: websocket_server
                listen: 0
                max_clients: 3
                max_client_frames_per_sec: 200
                handshake_timeout_secs: 1
            sinks:
              out: {type: blackhole, inputs: [in]}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let (child, port) = try SluiceProcess.serving(pipeline)
        let peer = try WebSocketPeer(
            "limits", ["--url", "ws://127.0.0.1:\(port)/", "--clients", "3", "--messages", "5000", "--lifetime", "40"])
        defer { peer.stop() }
        #expect(peer.waitForRecords(seconds: 40) { $0.contains { $0["event"] as? String == "done" } })
        kill(child.process.processIdentifier, SIGTERM)
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0)

        let records = peer.records()
        let outcome = { (event: String) in records.first { $0["event"] as? String == event } ?? [:] }
        #expect(outcome("extra")["status"] as? Int != 101, "a fourth client is refused: \(outcome("extra"))")
        // Closed with 1008; a client still sending usually sees the kernel's reset instead (1006).
        #expect([1008, 1006].contains(outcome("flood")["code"] as? Int), "a client flooding frames is closed")
        #expect(outcome("flood")["sent"] as? Int ?? 0 < 5000, "and could not send all it wanted: \(outcome("flood"))")
        let idle = try #require(outcome("idle")["secs"] as? Double)
        #expect(idle >= 0.5 && idle < 4, "a connection that never upgrades is closed after the timeout (\(idle) s)")

        let source = try #require(try pipeline.finalComponent("in"))
        #expect(source.int("clients_refused_total", "too_many_clients") ?? 0 >= 1)
        #expect(source.int("clients_dropped_total", "too_many_frames") == 1)
        // Frames up to the limit became events; none after it.
        let received = try #require(source.int("received_events_total"))
        #expect(received >= 200 && received < 5000, "\(received) events from the flooding client")
        #expect(source.balances)
        #expect(child.errorText.contains("3 clients are connected (max_clients); refusing more"))
        #expect(child.errorText.contains("a client sent more than 200 frames in a second; closing it (1008)"))
    }

    @Test func fiveHundredClientsComingAndGoingAndStalledOnesNeverBlockTheSink() throws {
        // Events at 10,000/s while 500 clients come and go (one message each) and 20 never read; the run lasts
        // until the last of the 500 has gone (on a busy machine their handshakes take longer: a fixed run once
        // ended before 84 of them came) and the stalled clients have been overrun (on a quiet one the 500 came and
        // went in half a second, before the stalled clients' socket buffers, some megabytes each, were full), then
        // SIGTERM ends it. Were the stalled clients able to hold the sink back, it would never drain and the run
        // never end: they never read a byte.
        let pipeline = try TemporaryPipeline(
            """
            sources:
              sim: {type: simulator, devices: 50, rate: 10000, seed: 9}
            sinks:
              out:
                type: websocket_server
                inputs: [sim]
                listen: 0
                max_client_buffer_events: 200
            metrics: {interval_secs: 0.5, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let (child, port) = try SluiceProcess.serving(pipeline)
        defer { child.killIfRunning() }
        let peer = try WebSocketPeer(
            "churn", ["--url", "ws://127.0.0.1:\(port)/", "--clients", "500", "--slow", "20", "--lifetime", "300"])
        defer { peer.stop() }
        #expect(peer.waitForRecords(seconds: 300) { $0.contains { $0["event"] as? String == "done" } })
        #expect(pipeline.waitForReport("out") { ($0.int("client_discarded_events_total", "slow_client") ?? 0) > 0 })
        kill(child.process.processIdentifier, SIGTERM)
        _ = child.readAllOutput(seconds: 60)
        #expect(child.waitForExit(seconds: 60) == 0, "the sink drained in spite of the stalled clients")

        let done = peer.records().first { $0["event"] as? String == "done" }
        #expect(done?["visits"] as? Int == 500, "clients came and went: \(String(describing: done))")
        let sink = try #require(try pipeline.finalComponent("out"))
        #expect(sink.int("sent_events_total") == (try pipeline.finalComponent("sim")?.int("sent_events_total")))
        #expect(sink.int("clients_total") == 520)
        // Broadcasting never waits for a client: the simulator was held back, if at all, only while this 2-core
        // machine was busy with the 500 handshakes (and whatever else runs beside the test).
        if case .double(let blocked)? = sink["buffer"]?["blocked_secs_total"] {
            #expect(underSanitizer || blocked < 5, "\(blocked) s blocked")
        }
        #expect(sink.int("client_discarded_events_total", "slow_client") ?? 0 > 0, "the stalled clients lost")
        #expect(sink.balances)
        let rss = try #require(try pipeline.reports().last?.int("process", "max_rss_bytes"))
        #expect(underSanitizer || rss < 150 << 20, "peak RSS \(rss) bytes")
    }
}
