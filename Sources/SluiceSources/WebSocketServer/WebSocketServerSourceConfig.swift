public import SluiceCore
internal import SluiceWebSocket

/// Options of the `websocket_server` source.
public struct WebSocketServerSourceConfig: SourceConfig {
    public static let typeName = "websocket_server"
    public static let summary = "Events from WebSocket clients: every message a client sends is an event."

    /// Where to listen, and the message size limit.
    public var listener: WebSocketListenerConfig
    /// How each message becomes an event.
    public var decoding = EventDecoding.json

    public init(reading options: ConfigMapping) {
        listener = WebSocketListenerConfig(reading: options)
        if let decoding = options.value("decoding")?.choice(EventDecoding.self) { self.decoding = decoding }
    }

    public func makeSource() -> any Source { WebSocketServerSource(config: self) }
}

/// Receives messages from any number of clients; with `block` downstream it stops reading from clients while the
/// pipeline is full.
struct WebSocketServerSource: Source {
    let config: WebSocketServerSourceConfig

    func run(_ context: SourceContext) async throws {
        let id = context.id
        let log = context.log
        var options = WebSocketServerOptions()
        options.host = config.listener.host
        options.port = config.listener.port
        options.path = config.listener.path
        options.certFile = config.listener.certFile
        options.keyFile = config.listener.keyFile
        options.maxMessageBytes = config.listener.maxMessageBytes
        let server = WebSocketServer(options: options) { log.info("websocket_server '\(id)': \($0)") }
        let port = try await server.start()
        let scheme = options.certFile == nil ? "ws" : "wss"
        log.info("websocket_server '\(id)': listening on \(scheme)://\(options.host):\(port)\(options.path ?? "/")")
        context.metrics.provideDetails {
            let statistics = server.statistics
            return [
                "clients": .int(Int64(statistics.clients)), "clients_total": .int(Int64(statistics.clientsTotal)),
                "received_bytes_total": .int(Int64(statistics.receivedBytesTotal)),
            ]
        }
        context.stop.onStop { server.stop() }
        var decoder = MessageDecoder(decoding: config.decoding, splitArrays: false, sourceID: id, log: log)
        for await event in server.events {
            switch event {
            case .messages(let messages):
                await decoder.deliver(messages, to: context)
                server.acknowledge(messages.count)
            case .oversize:
                decoder.countOversize(in: context)
            }
        }
    }
}
