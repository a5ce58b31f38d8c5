public import SluiceCore
internal import SluiceWebSocket
public import SluiceWebSocketListener

/// Options of the `websocket_server` source.
public struct WebSocketServerSourceConfig: SourceConfig {
    public static let typeName = "websocket_server"
    public static let summary = "Events from WebSocket clients: every message a client sends is an event."

    /// Where to listen, and the message size limit.
    public let listener: WebSocketListenerConfig
    /// How each message becomes an event.
    public let decoding: EventDecoding

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        let listener = try? WebSocketListenerConfig(reading: options)
        let decoding = options.value("decoding")?.choice(EventDecoding.self)
        self.listener = try options.validated(listener)
        self.decoding = decoding ?? .json
    }

    public func makeSource() -> any Source { WebSocketServerSource(config: self) }
}
