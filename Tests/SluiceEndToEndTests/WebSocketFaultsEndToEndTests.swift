import Foundation
import SluiceCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `websocket` source against a hostile server (`ws_peer.py hostile`): whatever the server does, Sluice
/// reports it, retries with backoff, keeps the pipeline alive and never spins a core.
@Suite(.serialized, .blocking)
struct WebSocketFaultsEndToEndTests {
    struct Fault: Sendable, CustomTestStringConvertible {
        /// The peer's `--behaviour`.
        let behaviour: String
        /// Text stderr must contain.
        let report: String
        /// Connections to wait for: enough to prove the client retries.
        let connections: Int
        var testDescription: String { behaviour }
    }

    static let faults = [
        Fault(behaviour: "invalid-frames", report: "reconnecting with backoff", connections: 7),
        Fault(behaviour: "close-storm", report: "the server closed the connection (1000)", connections: 5),
        Fault(behaviour: "huge-frame", report: "a message exceeded max_message_bytes", connections: 3),
        Fault(behaviour: "no-handshake", report: "no handshake within 1 s; reconnecting with backoff", connections: 4),
    ]

    @Test(arguments: faults)
    func aHostileServerIsReportedAndRetriedWithBackoff(_ fault: Fault) throws {
        let peer = try WebSocketPeer("hostile", ["--behaviour", fault.behaviour])
        defer { peer.stop() }
        let pipeline = try TemporaryPipeline(
            """
            sources:
              feed:
                type: websocket
                url: ws://127.0.0.1:\(peer.port)/
                handshake_timeout_secs: 1
                max_message_bytes: 1048576
                reconnect: {initial_delay_ms: 100, max_delay_ms: 800, jitter_percent: 0}
            sinks:
              out: {type: stdout, inputs: [feed]}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed { _ in nil }
        let started = Date()
        let connected = peer.waitForRecords(seconds: 30) { records in
            records.filter { $0["event"] as? String == "connected" }.count >= fault.connections
        }
        #expect(connected, "the client kept retrying")
        let elapsed = Date().timeIntervalSince(started)
        let cpu = try #require(child.cpuSeconds)
        kill(child.process.processIdentifier, SIGTERM)
        let output = String(decoding: child.readAllOutput(), as: UTF8.self)
        #expect(child.waitForExit() == 0)
        #expect(child.errorText.contains(fault.report), "stderr: \(child.errorText)")
        // Idle between attempts: a client that spins on a bad connection would burn a whole core.
        #expect(cpu < 0.3 * elapsed + 0.3, "\(cpu) CPU s in \(elapsed) s")

        let times = peer.records().filter { $0["event"] as? String == "connected" }.compactMap { $0["at"] as? Double }
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 >= 0.08 }, "never faster than the initial delay: \(gaps)")
        let source = try #require(try pipeline.finalComponent("feed"))
        #expect(source.balances)
        switch fault.behaviour {
        case "invalid-frames":
            // The good message before each violation arrives; the connection is then dropped and re-made.
            let lines = output.split(separator: "\n").map(String.init)
            #expect(Array(lines.prefix(fault.connections)) == (0..<fault.connections).map { #"{"conn":\#($0)}"# })
            let outcomes = peer.records().compactMap { $0["violation"] != nil ? $0["event"] as? String : nil }
            #expect(outcomes.count >= fault.connections - 1, "every violation ended its connection: \(outcomes)")
        case "huge-frame":
            #expect(source.int("discarded_events_total", "oversize") ?? 0 >= fault.connections - 1)
            #expect(output.isEmpty)
        default:
            // No message ever completed: the backoff grows instead of starting over.
            // (Delays of 100, 200, 400 ms and on, plus the handshake timeout where there is one.)
            #expect(gaps.count >= 3 && gaps.last! - gaps.first! >= 0.25, "backoff grows: \(gaps)")
            #expect(output.isEmpty)
        }
    }
}
