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
public enum APIFeed {
    /// Connects to `path` (with its query) of the API at `base` (`http://127.0.0.1:8686`, or a bare
    /// `HOST:PORT`), sending `token` as a bearer token. A feed that `reconnects` keeps trying while the pipeline is
    /// away; one that does not ends at its first close or failure. Ending the stream's iteration disconnects.
    public static func open(base: String, path: String, token: String?, reconnects: Bool) throws(APIError)
        -> AsyncStream<APIFeedEvent>
    {
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
        continuation.onTermination = { _ in
            client.stop()
            pump.cancel()
        }
        return stream
    }
}

/// Why the API could not start, or a feed could not open.
public struct APIError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
