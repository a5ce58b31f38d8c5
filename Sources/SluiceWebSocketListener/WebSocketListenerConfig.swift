public import SluiceCore
public import SluiceWebSocket

/// The listener options shared by the `websocket_server` sink and source: `listen`, `path`, `tls`, and the limits
/// on what a remote client controls.
public struct WebSocketListenerConfig: Sendable, Equatable {
    /// What to bind: 127.0.0.1 unless another is written explicitly. An IPv4 or IPv6 address binds exactly that
    /// address, `*` every interface of both families, an interface name its addresses, a host name every address
    /// it resolves to (resolved when the server starts).
    public var host = "127.0.0.1"
    /// The port; 0 picks a free one, reported on stderr.
    public var port = 8765
    /// Only this request path is accepted, when given.
    public var path: String?
    /// PEM certificate and key; both given means wss://.
    public var certFile: String?
    public var keyFile: String?
    /// Messages queued per client before its oldest are dropped.
    public var maxClientBufferEvents = 1000
    /// The largest message accepted from a client.
    public var maxMessageBytes = 16 << 20
    /// Clients connected at once; more are refused at the handshake.
    public var maxClients = 1000
    /// Data frames a client may send per second before it is disconnected.
    public var maxClientFramesPerSec = 10_000
    /// Seconds a client has to complete its handshake.
    public var handshakeTimeoutSecs = 10

    /// Reads the listener options from a component's mapping; throws when any of them was not valid.
    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        if let (host, port) = options.value("listen")?.listenAddress() {
            self.host = host
            self.port = port
        }
        if let path = options.value("path")?.string() { self.path = path.hasPrefix("/") ? path : "/" + path }
        if let tls = options.value("tls")?.mapping() {
            certFile = tls.required("cert_file", note: "the PEM certificate for wss://")?.string()
            keyFile = tls.required("key_file", note: "the PEM private key for wss://")?.string()
            tls.finish()
        }
        if let limit = options.value("max_client_buffer_events")?.int(in: 1...10_000_000) {
            maxClientBufferEvents = limit
        }
        if let limit = options.value("max_message_bytes")?.int(in: 1...(1 << 30)) { maxMessageBytes = limit }
        if let limit = options.value("max_clients")?.int(in: 1...100_000) { maxClients = limit }
        if let limit = options.value("max_client_frames_per_sec")?.int(in: 1...10_000_000) {
            maxClientFramesPerSec = limit
        }
        if let limit = options.value("handshake_timeout_secs")?.int(in: 1...3600) { handshakeTimeoutSecs = limit }
        if ["0.0.0.0", "::", "*"].contains(host), certFile == nil {
            options.log.warning(
                "\(options.name) listens on all interfaces without TLS", at: options.value("listen")?.mark,
                notes: [
                    "anyone who can reach this machine can connect; add tls: {cert_file, key_file} or bind 127.0.0.1"
                ])
        }
        try options.validated()
    }
}

extension WebSocketListenerConfig {
    /// The wrapper's options for this listener.
    public var serverOptions: WebSocketServerOptions {
        var options = WebSocketServerOptions()
        options.host = host
        options.port = port
        options.path = path
        options.certFile = certFile
        options.keyFile = keyFile
        options.maxClientBufferMessages = maxClientBufferEvents
        options.maxMessageBytes = maxMessageBytes
        options.maxClients = maxClients
        options.maxClientFramesPerSec = maxClientFramesPerSec
        options.handshakeTimeoutSecs = handshakeTimeoutSecs
        return options
    }

    /// The URLs clients connect to, one per listening socket, from the addresses the sockets report.
    public func urls(_ listening: ServerListening) -> String {
        listening.addresses.map { "\(certFile == nil ? "ws" : "wss")://\($0)\(path ?? "/")" }.joined(separator: ", ")
    }

    /// The metrics every server component reports: clients now and ever, and those refused or dropped, by cause.
    public static func clientMetrics(_ statistics: WebSocketServerStatistics, _ listening: ServerListening)
        -> JSONObject
    {
        [
            "listening_on": .array(listening.addresses.map { .string($0) }),
            "clients": .int(Int64(statistics.clients)),
            "clients_total": .int(Int64(statistics.clientsTotal)),
            "clients_refused_total": [
                "too_many_clients": .int(Int64(statistics.refusedTooManyTotal)),
                "wrong_path": .int(Int64(statistics.refusedWrongPathTotal)),
            ],
            "clients_dropped_total": [
                "too_many_frames": .int(Int64(statistics.droppedTooManyFramesTotal)),
                "oversize": .int(Int64(statistics.droppedOversizeTotal)),
            ],
            "clients_disconnected_total": [
                "normal": .int(Int64(statistics.disconnectedNormalTotal)),
                "by_server": .int(Int64(statistics.disconnectedByServerTotal)),
                "lost": .int(Int64(statistics.disconnectedLostTotal)),
            ],
        ]
    }
}
