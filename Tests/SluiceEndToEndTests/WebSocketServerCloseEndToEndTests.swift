import Foundation
import SluiceCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A client that closes while events stream gets the server's close reply at once, whatever was queued for it,
/// and the metrics count it as a normal disconnect (the queued messages it will never get, under `disconnected`).
///
/// The peer reads on until the server's close frame, as browsers do. Python websockets' default queue of 32
/// messages stops reading when it is full, so with a fast stream its close waits behind data already in the TCP
/// buffers (its close timeout, 10 s, several times over): no server can answer past data it has already sent.
@Suite(.serialized, .blocking)
struct WebSocketServerCloseEndToEndTests {
    @Test func aClosingClientGetsItsReplyAtOnceUnderAFastStream() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              fleet: {type: simulator, devices: 50, rate: 20000, seed: 3}
            sinks:
              live: {type: websocket_server, inputs: [fleet], listen: 0, max_client_buffer_events: 100}
            metrics: {interval_secs: 0.1, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let (child, port) = try SluiceProcess.serving(pipeline)
        // One client keeps up, then closes; the next stops reading, and closes once the server has had to drop
        // messages for it (its queue is full, and its TCP buffers too). It reads on only once the server has
        // counted its queue as discarded: reading at once would make room in the socket, which the server may
        // fill from the queue before it reads the close.
        let full = pipeline.directory.appendingPathComponent("queue-full")
        let counted = pipeline.directory.appendingPathComponent("queue-counted")
        var outcomes: [[String: Any]] = []
        let slowClient = ["--secs", "1", "--small-window", "--close-when", full.path, "--read-when", counted.path]
        for arguments in [["--secs", "2"], slowClient] {
            let peer = try WebSocketPeer(
                "closer", ["--url", "ws://127.0.0.1:\(port)/", "--lifetime", "30"] + arguments)
            defer { peer.stop() }
            if arguments == slowClient {
                func discarded(_ cause: String) -> Int {
                    pipeline.latest("live")?.int("client_discarded_events_total", cause) ?? 0
                }
                // Drops for this client alone: more than its whole queue since it connected.
                let before = discarded("slow_client")
                let deadline = Date().addingTimeInterval(30)
                while Date() < deadline, discarded("slow_client") <= before + 1000 { usleep(50_000) }
                _ = FileManager.default.createFile(atPath: full.path, contents: nil)
                while Date() < deadline, discarded("disconnected") == 0 { usleep(20_000) }
                _ = FileManager.default.createFile(atPath: counted.path, contents: nil)
            }
            #expect(peer.waitForRecords(seconds: 30) { $0.contains { $0["event"] as? String == "closer" } })
            outcomes.append(peer.records().first { $0["event"] as? String == "closer" } ?? [:])
        }
        kill(child.process.processIdentifier, SIGTERM)
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0)

        for outcome in outcomes {
            #expect(outcome["code"] as? Int == 1000, "the server answered the close: \(outcome)")
            let seconds = try #require(outcome["close_secs"] as? Double)
            // From reading on, the client first reads what the TCP buffers already hold (about 11,000 messages,
            // in Python): 0.01 to 0.05 s alone, 1.2 s once under the full suite's load. A server that left the
            // close unanswered until its 10 s timeout would still fail.
            #expect(seconds < 3, "the close reply came at once (once the client read on): \(outcome)")
            #expect(outcome["received"] as? Int ?? 0 > 100, "events were flowing: \(outcome)")
        }
        let sink = try #require(try pipeline.finalComponent("live"))
        #expect(sink.int("clients_disconnected_total", "normal") == 2)
        #expect(sink.int("clients_disconnected_total", "lost") == 0)
        #expect(sink.int("clients_disconnected_total", "by_server") == 0)
        #expect(sink.int("clients_total") == 2)
        // The second client's full queue was dropped when its close arrived, and counted.
        #expect(sink.int("client_discarded_events_total", "disconnected") ?? 0 >= 1)
        #expect(sink.int("client_discarded_events_total", "slow_client") ?? 0 >= 1)
    }

    /// Batches of 1,024 events into a 100-message client queue: a client that keeps up gets every one (the limit
    /// applies to what the client has not taken, after its socket was offered them, not to an arriving batch).
    @Test func aClientThatKeepsUpLosesNothingWhateverTheBatchSize() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              in: {type: stdin}
            sinks:
              live: {type: websocket_server, inputs: [in], listen: 0, max_client_buffer_events: 100}
            metrics: {interval_secs: 0.1, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        #expect(child.waitForErrorText("listening on ws://127.0.0.1:"))
        let tail = try #require(child.errorText.components(separatedBy: "listening on ws://127.0.0.1:").last)
        let port = try #require(Int(tail.prefix { $0.isNumber }))
        // A raw client that reads every frame until the server closes at the end of the input.
        let client = try WebSocketPeer(
            "closer", ["--url", "ws://127.0.0.1:\(port)/", "--secs", "60", "--lifetime", "60"])
        defer { client.stop() }
        // Once the server counts the client, 5,000 readings arrive in one write: batches of up to 1,024.
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if pipeline.latest("live")?.int("clients") == 1 { break }
            usleep(20_000)
        }
        let lines = (0..<5000).map { #"{"seq":\#($0)}"# }.joined(separator: "\n") + "\n"
        child.feed { $0 == 0 ? Data(lines.utf8) : nil }
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0)
        #expect(client.waitForRecords { $0.contains { $0["event"] as? String == "closer" } })
        let outcome = try #require(client.records().first { $0["event"] as? String == "closer" })
        #expect(outcome["received"] as? Int == 5000, "\(outcome)")
        #expect(outcome["code"] as? Int == 1001, "the server closed at the end of its input")
        let sink = try #require(try pipeline.finalComponent("live"))
        #expect(sink.int("client_discarded_events_total", "slow_client") == 0)
        #expect(sink.int("client_discarded_events_total", "disconnected") == 0)
    }
}
