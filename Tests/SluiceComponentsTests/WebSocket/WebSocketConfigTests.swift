import SluiceCore
import SluiceTesting
import SluiceWebSocket
import Testing

struct WebSocketURLTests {
    @Test func partsAndDefaults() throws {
        let plain = try #require(WebSocketURL("ws://example.com/feed?x=1"))
        #expect(plain == WebSocketURL("ws://example.com:80/feed?x=1"))
        #expect((plain.secure, plain.host, plain.port, plain.path) == (false, "example.com", 80, "/feed?x=1"))
        let secure = try #require(WebSocketURL("wss://127.0.0.1:8443"))
        #expect((secure.secure, secure.host, secure.port, secure.path) == (true, "127.0.0.1", 8443, "/"))
        let v6 = try #require(WebSocketURL("ws://[::1]:9000/x"))
        #expect((v6.host, v6.port, v6.description) == ("::1", 9000, "ws://[::1]:9000/x"))
        #expect(WebSocketURL("wss://host?q")?.path == "/?q")
    }

    @Test func rejectsWhatIsNotAWebSocketURL() {
        for text in [
            "http://example.com", "ws://", "ws://:80/", "ws://host:0/", "ws://host:99999/", "ws://[::1/", "example.com",
        ] {
            #expect(WebSocketURL(text) == nil, "\(text)")
        }
    }
}

struct ReconnectPolicyTests {
    @Test func delaysDoubleUpToTheMaximumWithJitterOnTop() {
        let policy = ReconnectPolicy(initialDelayMs: 250, maxDelayMs: 30_000, jitterPercent: 20, maxAttempts: 0)
        #expect(
            (1...9).map { policy.delayMs(attempt: $0, unit: 0) } == [
                250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000,
            ])
        #expect(policy.delayMs(attempt: 1, unit: 0.999) == 299)
        #expect(policy.delayMs(attempt: 100, unit: 0.5) == 33000)
    }
}

struct WebSocketSourceConfigTests {
    @Test func optionsAreCheckedAtLoad() {
        let yaml = """
            sources:
              feed:
                type: websocket
                url: http://example.com/
                reconnect: {initial_delay_ms: 0, max_attemps: 3}
                tls: {ca_fle: x.pem}
            sinks:
              out: {type: blackhole, inputs: [feed]}
            """
        let text = ComponentHarness.diagnostics(yaml)
        #expect(text.contains("p.yaml:4:10: error: 'http://example.com/' is not a ws:// or wss:// URL"))
        #expect(text.contains("error: 'initial_delay_ms' must be between 1 and 3600000, found 0"))
        #expect(text.contains("error: unknown key 'max_attemps' in 'reconnect'"))
        #expect(text.contains("did you mean 'max_attempts'?"))
        #expect(text.contains("error: unknown key 'ca_fle' in 'tls'"))
    }

    @Test func listenAddressesDefaultToLoopback() {
        let bare = ComponentHarness.load(
            "sources:\n  in: {type: websocket_server, listen: 9000}\nsinks:\n  out: {type: blackhole, inputs: [in]}\n")
        #expect(bare.diagnostics.isEmpty)
        let bad = ComponentHarness.diagnostics(
            "sources:\n  in: {type: websocket_server, listen: 'localhost'}\nsinks:\n  out: {type: blackhole, inputs: [in]}\n"
        )
        #expect(bad.contains("error: 'localhost' is not a listen address"))
        #expect(
            bad.contains(
                "note: write HOST:PORT ([IPV6]:PORT for an IPv6 address, *:PORT for every interface), or a bare PORT to "
                    + "bind 127.0.0.1 only"))
    }
}

struct WebSocketServerOutboxTests {
    /// Messages wait in the server's outbox until its service thread moves them to the clients' queues; when it
    /// falls behind, the producer waits instead of losing events, and a stop lets it go.
    @Test func aFullOutboxMakesTheProducerWaitUntilTheServerStops() async {
        var options = WebSocketServerOptions()
        options.maxClientBufferMessages = 10
        // Never started: nothing drains the outbox, which takes 4 x max(10, 1024) messages before it pushes back.
        let server = WebSocketServer(options: options) { _ in }
        let message: [UInt8] = Array("{}".utf8)
        await server.broadcast(Array(repeating: message, count: 4000))
        let producer = Task { await server.broadcast(Array(repeating: message, count: 1000)) }
        #expect(await value(of: producer, within: 0.3) == nil, "the producer waits for room")
        server.stop()
        #expect(await value(of: producer, within: 10) != nil, "a stop lets it go")
    }
}
