public import SluiceCore
internal import SluiceWebSocket

/// Options of the `websocket` source.
public struct WebSocketSourceConfig: SourceConfig {
    public static let typeName = "websocket"
    public static let summary = "Events from a WebSocket feed (ws:// or wss://), resubscribing after every reconnect."

    var options: WebSocketClientOptions?
    /// How each message becomes an event.
    public var decoding = EventDecoding.json
    /// A top-level JSON array message becomes one event per element.
    public var splitArrays = false
    /// After a reconnect, one event saying when the gap began and ended.
    public var emitGapEvents = false

    public init(reading options: ConfigMapping) {
        var url: WebSocketURL?
        var writtenURL: String?
        if let urlNode = options.required("url", note: "for example 'url: wss://feed.example.com/v1/stream'"),
            let text = urlNode.string()
        {
            url = WebSocketURL(text)
            if urlNode.isFromEnvironment { writtenURL = urlNode.writtenText }
            if url == nil {
                options.log.error(
                    "\(urlNode.shown(text)) is not a ws:// or wss:// URL", at: urlNode.mark,
                    notes: ["for example 'url: wss://feed.example.com/v1/stream' or 'url: ws://127.0.0.1:8765/'"])
            }
        }
        // The other options are read even without a valid URL, so that every mistake is reported at once.
        var client = WebSocketClientOptions(url: url ?? WebSocketURL("ws://invalid/")!)
        if let writtenURL { client.displayURL = writtenURL }
        if let headers = options.value("headers")?.mapping() {
            for (name, _, value) in headers.allEntries(naming: { "header '\($0)'" }) {
                if let text = value.string() { client.headers.append((name, text)) }
            }
        }
        client.subprotocol = options.value("subprotocol")?.string()
        for (message, _) in options.value("subscribe")?.stringList() ?? [] { client.subscribeMessages.append(message) }
        if let decoding = options.value("decoding")?.choice(EventDecoding.self) { self.decoding = decoding }
        if let split = options.value("split_arrays")?.bool() { splitArrays = split }
        if let ping = options.value("ping_interval_secs")?.int(in: 0...3600) { client.pingIntervalSecs = ping }
        if let idle = options.value("idle_timeout_secs")?.int(in: 1...3600) { client.idleTimeoutSecs = idle }
        if let handshake = options.value("handshake_timeout_secs")?.int(in: 1...3600) {
            client.handshakeTimeoutSecs = handshake
        }
        if let reconnect = options.value("reconnect")?.mapping() {
            if let value = reconnect.value("initial_delay_ms")?.int(in: 1...3_600_000) {
                client.reconnect.initialDelayMs = value
            }
            if let value = reconnect.value("max_delay_ms")?.int(in: 1...3_600_000) {
                client.reconnect.maxDelayMs = value
            }
            if let value = reconnect.value("jitter_percent")?.int(in: 0...100) {
                client.reconnect.jitterPercent = value
            }
            if let value = reconnect.value("max_attempts")?.int(in: 0...1_000_000) {
                client.reconnect.maxAttempts = value
            }
            reconnect.finish()
        }
        if let tls = options.value("tls")?.mapping() {
            client.caFile = tls.value("ca_file")?.string()
            if let insecure = tls.value("insecure_skip_verify")?.bool() { client.insecureSkipVerify = insecure }
            tls.finish()
        }
        if let limit = options.value("max_message_bytes")?.int(in: 1...(1 << 30)) { client.maxMessageBytes = limit }
        if let gaps = options.value("emit_gap_events")?.bool() { emitGapEvents = gaps }
        self.options = url == nil ? nil : client
    }

    public func makeSource() -> any Source { WebSocketSource(config: self) }
}
