import Foundation
import SluiceCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `websocket` source against an independent peer (Python's websockets), through the real binary.
@Suite(.serialized, .blocking)
struct WebSocketEndToEndTests {
    static func pipeline(url: String, extra: String = "", sink: String = "{type: stdout, inputs: [feed]}") -> String {
        """
        sources:
          feed:
            type: websocket
            url: \(url)
            reconnect: {initial_delay_ms: 100, max_delay_ms: 400, jitter_percent: 10}
        \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        sinks:
          out: \(sink)
        metrics: {interval_secs: 0, to: "$METRICS", format: json}
        """
    }

    /// Reads stdout until `lines` lines have arrived (or the output ends).
    /// The first `lines` lines of stdout (fewer if it ends first); a read may bring more, which are left out.
    func readLines(_ child: SluiceProcess, _ lines: Int) -> [Substring] {
        var output = Data()
        while output.reduce(0, { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }) < lines, let chunk = child.readChunk() {
            output.append(chunk)
        }
        return Array(String(decoding: output, as: UTF8.self).split(separator: "\n").prefix(lines))
    }

    /// Reads the feed's messages as Sluice prints them (after `output`, read already) until `count` lines came,
    /// stops the run, and expects `{"n": 0}` to `count - 1`, each once, in order.
    func expectEveryNumberOnceInOrder(_ child: SluiceProcess, count: Int, after output: Data) throws {
        var output = output
        var lines = output.count(where: { $0 == UInt8(ascii: "\n") })
        while lines < count, let chunk = child.readChunk() {
            output.append(chunk)
            lines += chunk.count(where: { $0 == UInt8(ascii: "\n") })
        }
        kill(child.process.processIdentifier, SIGTERM)
        output.append(child.readAllOutput())
        #expect(child.waitForExit() == 0)
        let numbers = try String(decoding: output, as: UTF8.self).split(separator: "\n").map {
            try JSONReader.parse(String($0)).int("n") ?? -1
        }
        #expect(numbers.count == count)
        // Compared apart from #expect, which would print both sequences whole (15 MB of log for a million).
        let misplaced = numbers.indices.first { numbers[$0] != $0 }
        #expect(
            misplaced == nil,
            "line \(misplaced ?? 0) is \(misplaced.map { numbers[$0] } ?? 0); stderr: \(child.errorText.suffix(1000))")
    }

    @Test func headersAndSubscribeMessagesReachTheServerAndStopClosesWith1000() throws {
        let peer = try WebSocketPeer("feed", ["--messages", "100"])
        defer { peer.stop() }
        let pipeline = try TemporaryPipeline(
            Self.pipeline(
                url: "ws://127.0.0.1:\(peer.port)/v1/stream?x=1",
                extra: """
                    headers: {Authorization: "Bearer ${FEED_TOKEN}", X-Client: sluice}
                    subscribe:
                      - '{"op":"subscribe","channel":"ticker"}'
                      - '{"op":"subscribe","channel":"trades"}'
                    """))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path], environment: ["FEED_TOKEN": "s3cret-token"])
        try child.start()
        child.feed { _ in nil }
        let lines = readLines(child, 100)
        kill(child.process.processIdentifier, SIGTERM)
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0)
        #expect(lines.count == 100)
        #expect(lines.first == #"{"n":0,"pad":""}"#)
        #expect(peer.waitForRecords { $0.contains { $0["event"] as? String == "closed" } })
        let records = peer.records()
        let connected = try #require(records.first { $0["event"] as? String == "connected" })
        let headers = try #require(connected["headers"] as? [String: String])
        #expect(headers["authorization"] == "Bearer s3cret-token")
        #expect(headers["x-client"] == "sluice")
        #expect(connected["path"] as? String == "/v1/stream?x=1")
        let messages = records.filter { $0["event"] as? String == "message" }.compactMap { $0["data"] as? String }
        #expect(messages == [#"{"op":"subscribe","channel":"ticker"}"#, #"{"op":"subscribe","channel":"trades"}"#])
        let closed = try #require(records.first { $0["event"] as? String == "closed" })
        #expect(closed["code"] as? Int == 1000)
        let source = try #require(try pipeline.finalComponent("feed"))
        #expect(source.int("received_events_total") == 100)
        #expect(source.int("connection", "connects_total") == 1)
        #expect(source["connection"]?["state"] == "stopped")
        #expect(!child.errorText.contains("s3cret-token"), "the token never appears in logs")
    }

    @Test func aRejectedHandshakeIsReportedOnceAndTheSourceGivesUpAfterMaxAttempts() throws {
        let peer = try WebSocketPeer("reject")
        defer { peer.stop() }
        let pipeline = try TemporaryPipeline(
            Self.pipeline(
                url: "ws://127.0.0.1:\(peer.port)/feed?token=${FEED_TOKEN}",
                extra: "reconnect: {initial_delay_ms: 20, max_delay_ms: 50, jitter_percent: 0, max_attempts: 4}"
            ).replacingOccurrences(
                of: "    reconnect: {initial_delay_ms: 100, max_delay_ms: 400, jitter_percent: 10}\n", with: ""))
        defer { pipeline.remove() }
        let (status, output, errors) = try SluiceProcess.run(
            ["run", pipeline.path], environment: ["FEED_TOKEN": "t0ken-in-the-url"])
        // The token in the URL reached the server, and no message or metric repeats it: they show the URL as
        // written.
        let requested = peer.records().compactMap { $0["path"] as? String }
        #expect(!requested.isEmpty && requested.allSatisfy { $0 == "/feed?token=t0ken-in-the-url" })
        #expect(!errors.contains("t0ken-in-the-url"))
        #expect(errors.contains("ws://127.0.0.1:\(peer.port)/feed?token=${FEED_TOKEN}: the handshake was rejected"))
        #expect(!(try String(contentsOfFile: pipeline.metricsPath, encoding: .utf8)).contains("t0ken-in-the-url"))
        #expect(status == 1)
        #expect(output.isEmpty)
        let rejections = errors.components(separatedBy: "the handshake was rejected with HTTP 401").count - 1
        #expect(rejections == 3, "once as it happens, in the give-up message and the exit error: \(errors)")
        #expect(errors.components(separatedBy: "got bad HTTP response '401'").count - 1 == 1, "lws says it once")
        #expect(errors.contains("gave up"))
        let source = try #require(try pipeline.finalComponent("feed"))
        #expect(source.int("connection", "reconnect_attempts_total") == 4)
        #expect(source.int("connection", "connects_total") == 0)
    }

    @Test func subscribeIsResentAfterTheServerRestartsAndNoMessageIsLost() throws {
        var peer = try WebSocketPeer("feed", ["--messages", "50"])
        let port = peer.port
        let pipeline = try TemporaryPipeline(
            Self.pipeline(url: "ws://127.0.0.1:\(port)/", extra: "subscribe: ['hello']\nemit_gap_events: true"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed { _ in nil }
        var lines = readLines(child, 50)
        peer.stop()
        peer = try WebSocketPeer("feed", ["--messages", "50", "--start", "50", "--port", String(port)])
        defer { peer.stop() }
        lines += readLines(child, 51)
        kill(child.process.processIdentifier, SIGTERM)
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0)
        let events = try lines.map { try JSONReader.parse(String($0)) }
        let numbers = events.compactMap { $0.int("n") }
        #expect(numbers == Array(0..<100))
        let gaps = events.filter { $0["type"] == "gap" }
        #expect(gaps.count == 1)
        #expect(peer.records().contains { $0["event"] as? String == "message" && $0["data"] as? String == "hello" })
        let source = try #require(try pipeline.finalComponent("feed"))
        #expect(source.int("connection", "connects_total") == 2)
        #expect(source.int("connection", "disconnects_total") ?? 0 >= 1)
        #expect(
            child.errorText.contains("the connection was lost") || child.errorText.contains("closed the connection"))
    }

    @Test func oneMebibyteMessagesArriveWholeAndOversizeOnesAreCountedAndClosedWith1009() throws {
        let big = try WebSocketPeer("feed", ["--messages", "4", "--size", String(1 << 20)])
        defer { big.stop() }
        let pipeline = try TemporaryPipeline(
            Self.pipeline(url: "ws://127.0.0.1:\(big.port)/", extra: "subscribe: [go]"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed { _ in nil }
        let lines = readLines(child, 4)
        kill(child.process.processIdentifier, SIGTERM)
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0)
        #expect(lines.count == 4)
        #expect(lines.allSatisfy { $0.utf8.count > 1 << 20 - 100 && $0.utf8.count < 1 << 20 + 100 })

        let small = try WebSocketPeer("feed", ["--messages", "3", "--size", "200000"])
        defer { small.stop() }
        let limited = try TemporaryPipeline(
            Self.pipeline(url: "ws://127.0.0.1:\(small.port)/", extra: "subscribe: [go]\nmax_message_bytes: 100000"))
        defer { limited.remove() }
        let second = SluiceProcess(["run", limited.path])
        try second.start()
        second.feed { _ in nil }
        #expect(
            small.waitForRecords { $0.contains { $0["event"] as? String == "closed" && $0["code"] as? Int == 1009 } })
        // It reconnects after the 1009 close.
        #expect(small.waitForRecords { $0.filter { $0["event"] as? String == "connected" }.count >= 2 })
        kill(second.process.processIdentifier, SIGTERM)
        _ = second.readAllOutput()
        #expect(second.waitForExit() == 0)
        let source = try #require(try limited.finalComponent("feed"))
        #expect(source.int("discarded_events_total", "oversize") ?? 0 >= 1)
        #expect(source.balances)
    }

    @Test func aServerThatNeverAnswersIsDroppedAfterTheIdleTimeoutAndReconnected() throws {
        let peer = try WebSocketPeer("silent")
        defer { peer.stop() }
        let pipeline = try TemporaryPipeline(
            Self.pipeline(url: "ws://127.0.0.1:\(peer.port)/", extra: "ping_interval_secs: 1\nidle_timeout_secs: 2"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed { _ in nil }
        let started = Date()
        #expect(peer.waitForRecords(seconds: 15) { $0.filter { $0["event"] as? String == "connected" }.count >= 2 })
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed >= 1.5, "dropped only after the idle timeout (\(elapsed) s)")
        kill(child.process.processIdentifier, SIGTERM)
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0)
    }

    /// A throwaway CA and a certificate it signed for localhost and 127.0.0.1, made with the openssl command.
    func makeCertificates() throws -> (directory: URL, path: (String) -> String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = { (name: String) in directory.appendingPathComponent(name).path }
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(
            toFile: path("ext.cnf"), atomically: true, encoding: .utf8)
        for arguments in [
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path("ca.key"), "-out", path("ca.pem"),
                "-days", "2", "-subj", "/CN=Sluice Test CA",
            ],
            [
                "req", "-newkey", "rsa:2048", "-nodes", "-keyout", path("server.key"), "-out", path("server.csr"),
                "-subj", "/CN=localhost",
            ],
            [
                "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                "-CAcreateserial", "-out", path("server.pem"), "-days", "2", "-extfile", path("ext.cnf"),
            ],
        ] {
            let openssl = Process()
            openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            openssl.arguments = arguments
            openssl.standardOutput = FileHandle.nullDevice
            openssl.standardError = FileHandle.nullDevice
            try openssl.run()
            openssl.waitUntilExit()
            #expect(openssl.terminationStatus == 0, "openssl \(arguments[0])")
        }
        return (directory, path)
    }

    @Test func wssIsAcceptedWithTheCAFileAndRejectedWithoutIt() throws {
        let (directory, path) = try makeCertificates()
        defer { try? FileManager.default.removeItem(at: directory) }
        let peer = try WebSocketPeer(
            "feed", ["--messages", "5", "--certfile", path("server.pem"), "--keyfile", path("server.key")])
        defer { peer.stop() }

        let trusted = try TemporaryPipeline(
            Self.pipeline(
                url: "wss://localhost:\(peer.port)/", extra: "subscribe: [go]\ntls: {ca_file: \"\(path("ca.pem"))\"}"))
        defer { trusted.remove() }
        let child = SluiceProcess(["run", trusted.path])
        try child.start()
        child.feed { _ in nil }
        let lines = readLines(child, 5)
        kill(child.process.processIdentifier, SIGTERM)
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0)
        #expect(lines.count == 5)

        let untrusted = try TemporaryPipeline(
            Self.pipeline(url: "wss://localhost:\(peer.port)/", extra: "subscribe: [go]").replacingOccurrences(
                of: "jitter_percent: 10}", with: "jitter_percent: 10, max_attempts: 1}"))
        defer { untrusted.remove() }
        let (status, output, errors) = try SluiceProcess.run(["run", untrusted.path])
        #expect(status == 1)
        #expect(output.isEmpty)
        #expect(errors.contains("TLS failed") || errors.contains("SSL"), "\(errors)")
    }

    /// A `wss://` server that cannot bind fails the run with the reason, and only once its TLS context is destroyed:
    /// told earlier, the run ended at once and OpenSSL's exit handlers freed its locks under the thread still
    /// destroying the context (the crash at exit that ThreadSanitizer caught for a client that gave up). The port
    /// is held by an independent peer; several runs, as the crash came only when the exit won the race.
    @Test func aWssServerWhosePortIsTakenFailsCleanlyEveryTime() throws {
        let (directory, path) = try makeCertificates()
        defer { try? FileManager.default.removeItem(at: directory) }
        let occupant = try WebSocketPeer("feed")
        defer { occupant.stop() }
        let pipeline = try TemporaryPipeline(
            """
            sources:
              fleet: {type: simulator, rate: max, count: 1000000}
            sinks:
              live:
                type: websocket_server
                inputs: [fleet]
                listen: 127.0.0.1:\(occupant.port)
                tls: {cert_file: "\(path("server.pem"))", key_file: "\(path("server.key"))"}
            """)
        defer { pipeline.remove() }
        for attempt in 1...8 {
            let (status, _, errors) = try SluiceProcess.run(["run", pipeline.path])
            #expect(status == 1, "attempt \(attempt): \(errors)")
            #expect(errors.contains("cannot listen on 127.0.0.1:\(occupant.port)"), "attempt \(attempt): \(errors)")
        }
    }

    /// libwebsockets' log is process-wide; each line still goes to the component whose service thread logged it.
    /// Here a server sink starts beside a client that fails TLS: the TLS reason is the client's.
    @Test func libwebsocketsErrorsAreReportedUnderTheComponentThatHadThem() throws {
        let (directory, path) = try makeCertificates()
        defer { try? FileManager.default.removeItem(at: directory) }
        let peer = try WebSocketPeer(
            "feed", ["--messages", "5", "--certfile", path("server.pem"), "--keyfile", path("server.key")])
        defer { peer.stop() }
        let pipeline = try TemporaryPipeline(
            """
            sources:
              feed:
                type: websocket
                url: wss://localhost:\(peer.port)/
                reconnect: {initial_delay_ms: 100, max_attempts: 2}
            sinks:
              live: {type: websocket_server, inputs: [feed], listen: 0}
            """)
        defer { pipeline.remove() }
        let (status, _, errors) = try SluiceProcess.run(["run", pipeline.path])
        #expect(status == 1)
        let lwsLines = errors.split(separator: "\n").filter { $0.contains("libwebsockets:") }
        #expect(lwsLines.contains { $0.contains("certificate") }, "\(errors)")
        #expect(lwsLines.allSatisfy { $0.hasPrefix("sluice: websocket 'feed': libwebsockets:") }, "\(errors)")
    }

    @Test func aFastServerIntoABlockPipelineWithASlowSinkLosesNothingAndStaysBounded() throws {
        // (A sanitized build is 5 to 15 times slower: a fifth of the feed keeps the test within its time.)
        let count = underSanitizer ? 200_000 : 1_000_000
        let peer = try WebSocketPeer("feed", ["--messages", String(count), "--size", "100", "--lifetime", "280"])
        defer { peer.stop() }
        let pipeline = try TemporaryPipeline(
            Self.pipeline(
                url: "ws://127.0.0.1:\(peer.port)/", extra: "subscribe: [go]",
                sink: "{type: stdout, inputs: [feed], buffer: {max_events: 1000, when_full: block}}"
            ).replacingOccurrences(of: "interval_secs: 0,", with: "interval_secs: 0.5,"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed { _ in nil }
        // A slow reader first: Sluice must stop reading the socket rather than buffer the feed.
        var output = Data()
        for _ in 0..<200 {
            guard let chunk = child.readChunk(limit: 1 << 12) else { break }
            output.append(chunk)
            usleep(5000)
        }
        try expectEveryNumberOnceInOrder(child, count: count, after: output)
        let report = try #require(try pipeline.reports().last)
        let rss = try #require(report.int("process", "max_rss_bytes"))
        #expect(underSanitizer || rss < 100 << 20, "peak RSS \(rss)")
        #expect(try pipeline.finalComponent("out")?.int("buffer", "high_water_events") ?? .max <= 1000)
    }

    /// While a `block` buffer downstream is full the source stops reading the socket. That silence is its own: held
    /// three times as long as its idle timeout, it neither misses a pong it could not read nor hangs up, and every
    /// message arrives once, in order. (lws counted only pongs as signs of life: it pinged the paused connection,
    /// the pong waited unread behind the data, and it hung up, losing what was in flight.)
    @Test func aPauseForBackpressureLongerThanTheIdleTimeoutLosesNothing() throws {
        let count = 100_000
        let peer = try WebSocketPeer("feed", ["--messages", String(count), "--size", "100", "--lifetime", "120"])
        defer { peer.stop() }
        let pipeline = try TemporaryPipeline(
            Self.pipeline(
                url: "ws://127.0.0.1:\(peer.port)/", extra: "subscribe: [go]\nping_interval_secs: 1\nidle_timeout_secs: 2",
                sink: "{type: stdout, inputs: [feed], buffer: {max_events: 1000, when_full: block}}"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        defer { child.killIfRunning() }
        try child.start()
        child.feed { _ in nil }
        let output = try #require(child.readChunk(limit: 1 << 12))
        // Nothing is read for 6 s: the pipe, the sink's buffer and the socket fill, and the source stops reading.
        let stall = ContinuousClock.now
        usleep(6_000_000)
        try expectEveryNumberOnceInOrder(child, count: count, after: output)
        #expect(ContinuousClock.now - stall < .seconds(100))
        #expect(!child.errorText.contains("reconnecting"), "\(child.errorText)")
        let sink = try #require(try pipeline.finalComponent("out"))
        let blocked = try #require(sink["buffer"]?["blocked_secs_total"]?.doubleValue)
        #expect(blocked > 4, "the source waited \(blocked) s for the sink's buffer")
    }

    @Test func theServerSinkServesTwoClientsAndOnlyTheSlowOneLoses() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              readings: {type: stdin}
            sinks:
              dash: {type: websocket_server, inputs: [readings], listen: 0, path: /fleet, max_client_buffer_events: 100}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        // Events flow only once both clients are connected (a loaded machine may take seconds to start Python), at
        // 2,000 a second: 60 chunks of 200, one every 0.1 s. Each event carries 200 bytes of text, as a reading
        // does, so that what the slow client does not take outgrows the kernel's socket buffers.
        let bothConnected = DispatchSemaphore(value: 0)
        let text = String(repeating: "x", count: 200)
        let (child, port) = try SluiceProcess.serving(pipeline) { index in
            guard index < 60 else { return nil }
            if index == 0 { bothConnected.wait() } else { usleep(100_000) }
            let events = (index * 200..<(index + 1) * 200).map { #"{"seq":\#($0),"text":"\#(text)"}"# }
            let chunk = events.joined(separator: "\n") + "\n"
            return Data(chunk.utf8)
        }
        let url = "ws://127.0.0.1:\(port)/fleet"
        let fast: WebSocketPeer
        let slow: WebSocketPeer
        do {
            defer { bothConnected.signal() }
            fast = try WebSocketPeer("client", ["--url", url])
            // The slow client takes 20 messages a second through a 4 KiB window: its queue overflows within a second.
            slow = try WebSocketPeer("client", ["--url", url, "--delay", "0.05", "--small-window"])
        }
        defer {
            fast.stop()
            slow.stop()
        }
        let feedingStarted = Date()
        #expect(child.waitForExit(seconds: 60) == 0)
        #expect(fast.waitForRecords { $0.contains { $0["event"] as? String == "summary" } })
        let fastSeqs = try #require(fast.records().first { $0["event"] as? String == "summary" }?["seqs"] as? [Int])
        // The fast client misses nothing (under a sanitizer, with the machine this loaded, even the Python client
        // cannot take 2,000 messages a second, and loses its oldest).
        let fastMissedNone = fastSeqs == Array(0..<12000)
        #expect(underSanitizer || fastMissedNone, "the fast client had \(fastSeqs.count) events")
        #expect(fastSeqs.last == 11999)
        #expect(fast.records().first { $0["event"] as? String == "summary" }?["code"] as? Int == 1001)
        let sink = try #require(try pipeline.finalComponent("dash"))
        #expect(sink.int("client_discarded_events_total", "slow_client") ?? 0 > 0)
        #expect(sink.int("clients_total") == 2)
        #expect(sink.int("sent_events_total") == 12000)
        // The pipeline was never held back: 12,000 events at 2,000/s take 6 s, plus at most 2 s for the stalled
        // client at shutdown, plus what a loaded machine adds (held back to the slow client's pace it would take
        // 10 minutes).
        let took = Date().timeIntervalSince(feedingStarted)
        #expect(took < 15, "took \(took) s")
    }

    @Test func theServerSourceTurnsClientMessagesIntoEvents() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              clients: {type: websocket_server, listen: 127.0.0.1:0}
            sinks:
              out: {type: stdout, inputs: [clients]}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let (child, port) = try SluiceProcess.serving(pipeline)
        let sender = try WebSocketPeer("client", ["--url", "ws://127.0.0.1:\(port)/", "--send", "--messages", "1000"])
        defer { sender.stop() }
        let lines = readLines(child, 1000)
        kill(child.process.processIdentifier, SIGTERM)
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0)
        let numbers = try lines.map { try JSONReader.parse(String($0)).int("n") ?? -1 }
        #expect(numbers == Array(0..<1000))
        let source = try #require(try pipeline.finalComponent("clients"))
        #expect(source.int("received_events_total") == 1000)
        #expect(source.int("clients_total") == 1)
    }

    @Test func theServerSinkServesWssToASluiceClient() throws {
        let (directory, path) = try makeCertificates()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try TemporaryPipeline(
            """
            sources:
              sim: {type: simulator, devices: 1, rate: 200, seed: 9}
            sinks:
              feed:
                type: websocket_server
                inputs: [sim]
                listen: 127.0.0.1:0
                tls: {cert_file: "\(path("server.pem"))", key_file: "\(path("server.key"))"}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { server.remove() }
        let (serving, port) = try SluiceProcess.serving(server, scheme: "wss")
        let client = try TemporaryPipeline(
            Self.pipeline(url: "wss://localhost:\(port)/", extra: "tls: {ca_file: \"\(path("ca.pem"))\"}"))
        defer { client.remove() }
        let reading = SluiceProcess(["run", client.path])
        try reading.start()
        reading.feed { _ in nil }
        let lines = readLines(reading, 20)
        kill(reading.process.processIdentifier, SIGTERM)
        kill(serving.process.processIdentifier, SIGTERM)
        _ = reading.readAllOutput()
        _ = serving.readAllOutput()
        #expect(reading.waitForExit() == 0)
        #expect(serving.waitForExit() == 0)
        let events = try lines.map { try JSONReader.parse(String($0)) }
        #expect(events.count == 20)
        #expect(events.allSatisfy { $0["device"] == "dev-0000" })
        #expect(try server.finalComponent("feed")?.int("clients_total") == 1)
    }

    @Test func validateWarnsAboutAServerOnAllInterfacesWithoutTLS() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              in: {type: websocket_server, listen: "0.0.0.0:9000"}
            sinks:
              out: {type: blackhole, inputs: [in]}
            """)
        defer { pipeline.remove() }
        let result = try SluiceProcess.run(["validate", pipeline.path])
        #expect(result.status == 0)
        #expect(result.errors.contains("warning: source 'in' listens on all interfaces without TLS"))
    }
}
