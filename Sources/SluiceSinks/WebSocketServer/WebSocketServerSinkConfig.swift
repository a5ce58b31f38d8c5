public import SluiceCore
public import SluiceWebSocketListener

/// Options of the `websocket_server` sink.
public struct WebSocketServerSinkConfig: SinkConfig {
    public static let typeName = "websocket_server"
    public static let summary = "Serves every event as a JSON text message to every connected WebSocket client."

    /// Where to listen, and the per-client queue limit.
    public let listener: WebSocketListenerConfig

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        listener = try WebSocketListenerConfig(reading: options)
    }

    public func makeSink() -> any Sink { WebSocketServerSink(listener: listener) }
}
