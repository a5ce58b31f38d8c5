public import SluiceCore
internal import SluiceWebSocket

/// Options of the `websocket` source.
public struct WebSocketSourceConfig: SourceConfig {
    public static let typeName = "websocket"
    public static let summary = "Events from a WebSocket feed (ws:// or wss://), resubscribing after every reconnect."

    /// The client's options: the URL and everything about the connection.
    let client: WebSocketClientOptions
    /// How each message becomes an event.
    public let decoding: EventDecoding
    /// A top-level JSON array message becomes one event per element.
    public let splitArrays: Bool
    /// After a reconnect, one event saying when the gap began and ended.
    public let emitGapEvents: Bool

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
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
        // The other options are read even without a valid URL, so that every mistake is reported at once; they
        // go into the client's options only once everything is known to be valid.
        var headers: [(name: String, value: String)] = []
        if let mapping = options.value("headers")?.mapping() {
            for (name, _, value) in mapping.allEntries(naming: { "header '\($0)'" }) {
                if let text = value.string() { headers.append((name, text)) }
            }
        }
        let subprotocol = options.value("subprotocol")?.string()
        let subscribe = (options.value("subscribe")?.stringList() ?? []).map(\.0)
        let decoding = options.value("decoding")?.choice(EventDecoding.self)
        let splitArrays = options.value("split_arrays")?.bool()
        let ping = options.value("ping_interval_secs")?.int(in: 0...3600)
        let idle = options.value("idle_timeout_secs")?.int(in: 1...3600)
        let handshake = options.value("handshake_timeout_secs")?.int(in: 1...3600)
        var reconnect = ReconnectPolicy()
        if let mapping = options.value("reconnect")?.mapping() {
            if let value = mapping.value("initial_delay_ms")?.int(in: 1...3_600_000) {
                reconnect.initialDelayMs = value
            }
            if let value = mapping.value("max_delay_ms")?.int(in: 1...3_600_000) { reconnect.maxDelayMs = value }
            if let value = mapping.value("jitter_percent")?.int(in: 0...100) { reconnect.jitterPercent = value }
            if let value = mapping.value("max_attempts")?.int(in: 0...1_000_000) { reconnect.maxAttempts = value }
            mapping.finish()
        }
        var caFile: String?
        var insecure: Bool?
        if let tls = options.value("tls")?.mapping() {
            caFile = tls.value("ca_file")?.string()
            insecure = tls.value("insecure_skip_verify")?.bool()
            tls.finish()
        }
        let maxMessageBytes = options.value("max_message_bytes")?.int(in: 1...(1 << 30))
        let gaps = options.value("emit_gap_events")?.bool()

        var client = WebSocketClientOptions(url: try options.validated(url))
        if let writtenURL { client.displayURL = writtenURL }
        client.headers = headers
        client.subprotocol = subprotocol
        client.subscribeMessages = subscribe
        if let ping { client.pingIntervalSecs = ping }
        if let idle { client.idleTimeoutSecs = idle }
        if let handshake { client.handshakeTimeoutSecs = handshake }
        client.reconnect = reconnect
        client.caFile = caFile
        if let insecure { client.insecureSkipVerify = insecure }
        if let maxMessageBytes { client.maxMessageBytes = maxMessageBytes }
        self.client = client
        self.decoding = decoding ?? .json
        self.splitArrays = splitArrays ?? false
        self.emitGapEvents = gaps ?? false
    }

    public func makeSource() -> any Source { WebSocketSource(config: self) }
}
