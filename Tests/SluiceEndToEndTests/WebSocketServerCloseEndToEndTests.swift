import Foundation
import SluiceCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A client that closes while events stream gets the server's close reply at once, whatever was queued for it,
/// and the metrics count it as a normal disconnect (the queued messages it will never get, under `client_closed`).
///
/// The peer reads on until the server's close frame, as browsers do. Python websockets' default queue of 32
/// messages stops reading when it is full, so with a fast stream its close waits behind data already in the TCP
/// buffers (its close timeout, 10 s, several times over): no server can answer past data it has already sent.
@Suite(.serialized)
struct WebSocketServerCloseEndToEndTests {
    @Test func aClosingClientGetsItsReplyAtOnceUnderAFastStream() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              fleet: {type: simulator, devices: 50, rate: 20000, seed: 3}
            sinks:
              live: {type: websocket_server, inputs: [fleet], listen: 0, max_client_buffer_events: 100}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let (child, port) = try SluiceProcess.serving(pipeline)
        // One client keeps up, then closes; the next stops reading for two seconds first, so that its queue on the
        // server is full and its TCP buffers too.
        var outcomes: [[String: Any]] = []
        for arguments in [["--secs", "2"], ["--secs", "1", "--pause", "2", "--small-window"]] {
            let peer = try WebSocketPeer(
                "closer", ["--url", "ws://127.0.0.1:\(port)/", "--lifetime", "30"] + arguments)
            defer { peer.stop() }
            #expect(peer.waitForRecords(seconds: 30) { $0.contains { $0["event"] as? String == "closer" } })
            outcomes.append(peer.records().first { $0["event"] as? String == "closer" } ?? [:])
        }
        kill(child.process.processIdentifier, SIGTERM)
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0)

        for outcome in outcomes {
            #expect(outcome["code"] as? Int == 1000, "the server answered the close: \(outcome)")
            let seconds = try #require(outcome["close_secs"] as? Double)
            #expect(seconds < 1, "the close reply came at once: \(outcome)")
            #expect(outcome["received"] as? Int ?? 0 > 100, "events were flowing: \(outcome)")
        }
        let sink = try #require(try pipeline.finalComponent("live"))
        #expect(sink.int("clients_disconnected_total", "normal") == 2)
        #expect(sink.int("clients_disconnected_total", "lost") == 0)
        #expect(sink.int("clients_disconnected_total", "by_server") == 0)
        #expect(sink.int("clients_total") == 2)
        // The second client's full queue was dropped when it closed, and counted.
        #expect(sink.int("client_discarded_events_total", "client_closed") ?? 0 >= 1)
        #expect(sink.int("client_discarded_events_total", "slow_client") ?? 0 >= 1)
    }
}
