internal import SluiceWebSocket

/// What a feed of a running pipeline's API (`/api/live`, `/api/tap`) delivers, in order.
public enum APIFeedEvent: Sendable {
    /// One message: a report (live) or an event (tap), as JSON text.
    case message(String)
    /// The connection's state changed (connecting, lost, reconnecting), in words.
    case status(String)
    /// The feed is over; `normal` when the server closed it because it was done (1000) or is stopping (1001), not
    /// for a failure.
    case ended(reason: String, normal: Bool)
}

/// A WebSocket feed of a running pipeline's API, for `sluice top` and `sluice tap`.
///
/// Its connection runs on a thread of its own, which frees the connection's sockets and TLS state when it ends:
/// ``close()`` waits for that, so that a command never exits while the thread is still freeing them (the process's
/// exit handlers tear down OpenSSL's global state, and the thread would then crash in it).
public final class APIFeed: Sendable {
    /// The feed's events, in order; it ends when the connection has ended.
    public let events: AsyncStream<APIFeedEvent>
    private let client: WebSocketClient
    /// Passes the client's events on; it ends once the client's thread has ended.
    private let pump: Task<Void, Never>

    private init(events: AsyncStream<APIFeedEvent>, client: WebSocketClient, pump: Task<Void, Never>) {
        self.events = events
        self.client = client
        self.pump = pump
    }

    /// Connects to `path` (with its query) of the API at `base` (`http://127.0.0.1:8686`, or a bare
    /// `HOST:PORT`), sending `token` as a bearer token. A feed that `reconnects` keeps trying while the pipeline is
    /// away; one that does not ends at its first close or failure.
    public static func open(base: String, path: String, token: String?, reconnects: Bool) throws(APIError) -> APIFeed {
        var address = base
        for scheme in ["http://", "ws://"] where address.hasPrefix(scheme) { address.removeFirst(scheme.count) }
        while address.hasSuffix("/") { address.removeLast() }
        guard !base.hasPrefix("https://"), let url = WebSocketURL("ws://\(address)\(path)") else {
            throw APIError(message: "'\(base)' is not an API address: write http://HOST:PORT")
        }
        var options = WebSocketClientOptions(url: url)
        if let token { options.headers = [(name: "Authorization", value: "Bearer \(token)")] }
        options.reconnects = reconnects
        options.reconnect = ReconnectPolicy(initialDelayMs: 250, maxDelayMs: 2000)
        let (stream, continuation) = AsyncStream.makeStream(of: APIFeedEvent.self)
        let client = WebSocketClient(options: options) { continuation.yield(.status($0)) }
        do {
            try client.start()
        } catch {
            throw APIError(message: error.message)
        }
        let pump = Task {
            // Not cancelled: it runs until the client's events end, after its thread freed the connection.
            for await event in client.events {
                switch event {
                case .messages(let messages):
                    for message in messages {
                        continuation.yield(.message(String(decoding: message.bytes, as: UTF8.self)))
                    }
                    client.acknowledge(messages.count)
                case .oversize, .reconnected:
                    break
                case .gaveUp(let reason):
                    continuation.yield(
                        .ended(reason: reason, normal: reason.contains("(1000") || reason.contains("(1001")))
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in client.stop() }
        return APIFeed(events: stream, client: client, pump: pump)
    }

    /// Disconnects (with 1000), and returns once the connection's thread has ended.
    public func close() async {
        client.stop()
        await pump.value
    }
}

/// Why the API could not start, or a feed could not open.
public struct APIError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
