public import SluiceCore
internal import SluiceWebSocket
public import SluiceWebSocketListener

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
        let server = WebSocketServer(options: config.listener.serverOptions) {
            log.info("websocket_server '\(id)': \($0)")
        }
        let port = try await server.start()
        log.info("websocket_server '\(id)': listening on \(config.listener.url(port: port))")
        context.metrics.provideDetails {
            let statistics = server.statistics
            var details = WebSocketListenerConfig.clientMetrics(statistics)
            details["received_bytes_total"] = .int(Int64(statistics.receivedBytesTotal))
            return details
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
