internal import CLibWebSockets
internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// What a ``WebSocketClient`` connects to and how it behaves.
public struct WebSocketClientOptions: Sendable {
    /// The feed.
    public var url: WebSocketURL {
        didSet { displayURL = url.description }
    }
    /// The URL as messages and metrics show it: set it to the URL as written (`wss://feed/?key=${KEY}`) when
    /// parts of it came from the environment, so that a token in it is never printed.
    public var displayURL: String
    /// Extra handshake headers, sent in order.
    public var headers: [(name: String, value: String)] = []
    /// The `Sec-WebSocket-Protocol` to ask for.
    public var subprotocol: String?
    /// Text messages sent, in order, after every connect and reconnect.
    public var subscribeMessages: [String] = []
    /// Seconds of silence before a ping; 0 sends no pings.
    public var pingIntervalSecs = 20
    /// Seconds with nothing valid received (data or pong) before hanging up and reconnecting.
    public var idleTimeoutSecs = 60
    /// Seconds a connection may take to connect and complete its handshake (and lws' other round trips).
    public var handshakeTimeoutSecs = 10
    /// How reconnects are paced.
    public var reconnect = ReconnectPolicy()
    /// False for a client of one connection (`sluice tap`): when it fails or ends, the client ends with
    /// ``WebSocketClientEvent/gaveUp(_:)`` and the reason, instead of reconnecting.
    public var reconnects = true
    /// A PEM file of certificate authorities to trust for wss://, beside the system's.
    public var caFile: String?
    /// Accept any certificate (self-signed, unknown CA, wrong host name).
    public var insecureSkipVerify = false
    /// Messages larger than this are discarded and the connection is closed with 1009 and re-established.
    public var maxMessageBytes = 16 << 20
    /// Messages delivered but not yet acknowledged at which the client stops reading the socket.
    public var highWaterMessages = 4096

    public init(url: WebSocketURL) {
        self.url = url
        displayURL = url.description
    }
}

/// One WebSocket message.
public struct WebSocketMessage: Sendable, Equatable {
    /// The payload.
    public var bytes: [UInt8]
    /// True for a binary message, false for text.
    public var isBinary: Bool

    public init(bytes: [UInt8], isBinary: Bool) {
        self.bytes = bytes
        self.isBinary = isBinary
    }
}

/// The connection's state, for metrics.
public enum WebSocketConnectionState: String, Sendable {
    case connecting
    case connected
    case backingOff = "backing_off"
    case stopped
}

/// What the client reports to its consumer, in order.
public enum WebSocketClientEvent: Sendable {
    /// The complete messages from one pass of the service loop.
    case messages([WebSocketMessage])
    /// A message over the size limit was discarded (its size as far as known, in bytes).
    case oversize(bytes: Int)
    /// The connection came back after a gap that began and ended at these wall-clock milliseconds.
    case reconnected(gapStartMillis: Int64, gapEndMillis: Int64)
    /// The client gave up after `maxAttempts` retries, with the last error.
    case gaveUp(String)
}

/// Counters and state of a client, for metrics.
public struct WebSocketClientStatistics: Sendable, Equatable {
    public var state = WebSocketConnectionState.connecting
    public var connectsTotal = 0
    public var disconnectsTotal = 0
    public var reconnectAttemptsTotal = 0
    public var receivedBytesTotal = 0
    public var lastError: String?
}

/// A WebSocket client on libwebsockets that stays connected: it reconnects with backoff, re-sends its subscribe
/// messages, pings, hangs up on silence, and stops reading the socket while its consumer is behind.
///
/// libwebsockets runs on a thread of its own (every lws call but `lws_cancel_service` must run there). Messages
/// collected during one `lws_service` pass are delivered as one ``WebSocketClientEvent/messages(_:)`` batch on
/// ``events``; the consumer calls ``acknowledge(_:)`` once it has passed them on, which is what lets reading
/// resume. ``stop()`` closes with 1000 and ends ``events``.
public final class WebSocketClient: @unchecked Sendable {
    // @unchecked: the fields under "service thread only" are read and written only on the service thread (the
    // run loop and the lws callbacks it runs); everything shared with other threads is in `shared` (a Mutex) or is
    // a `let`. C memory is allocated in `run()` and freed at its end, after `lws_context_destroy`.

    /// Events for the consumer: batches of messages and notable moments, ending when the client stops.
    public let events: AsyncStream<WebSocketClientEvent>
    let continuation: AsyncStream<WebSocketClientEvent>.Continuation
    let options: WebSocketClientOptions
    let log: @Sendable (String) -> Void

    /// The lws context as the other threads see it: only ever used for `lws_cancel_service`, under the lock, so
    /// it cannot race with `lws_context_destroy` (which runs after the field is cleared under the same lock).
    struct ContextHandle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    struct Shared {
        var context: ContextHandle?
        var stopRequested = false
        var gate: ReadGate
        var statistics = WebSocketClientStatistics()
        var started = false
    }

    let shared: Mutex<Shared>

    // MARK: Service thread only

    var wsi: OpaquePointer?
    /// The connection being made, until its handshake completes or fails.
    var connectingWsi: OpaquePointer?
    /// True from the start of a connection attempt until it is established or has failed.
    var connecting = false
    var handshakeTimedOut = false
    var pending: [WebSocketMessage] = []
    var assembler: MessageAssembler
    var closeCode: Int32?
    var outbox: [String] = []
    var paused = false
    var exitRequested = false
    var attempts = 0
    var httpStatus: UInt32 = 0
    var peerCloseReason: String?
    var lastReported: String?
    var connectedAtNanos: UInt64?
    var receivedSinceConnect = false
    var disconnectedAtMillis: Int64?
    var random = SystemRandomNumberGenerator()
    var resources: LWSResources?

    /// Creates a client; nothing happens until ``start()``. `log` receives one line per state change.
    public init(options: WebSocketClientOptions, log: @escaping @Sendable (String) -> Void) {
        self.options = options
        self.log = log
        shared = Mutex(Shared(gate: ReadGate(highWater: options.highWaterMessages)))
        assembler = MessageAssembler(maxMessageBytes: options.maxMessageBytes)
        (events, continuation) = AsyncStream.makeStream(of: WebSocketClientEvent.self)
    }

    /// Starts the service thread, which connects at once; throws when the thread cannot be created.
    public func start() throws(WebSocketClientError) {
        let first = shared.locked { state -> Bool in
            defer { state.started = true }
            return !state.started
        }
        guard first else { return }
        let retained = Unmanaged.passRetained(self)
        do {
            try ServiceThread.start { retained.takeRetainedValue().run() }
        } catch {
            retained.release()
            continuation.finish()
            throw WebSocketClientError(message: error.message)
        }
    }

    /// Reports that `count` delivered messages were passed on; reading resumes once few enough are outstanding.
    public func acknowledge(_ count: Int) {
        shared.locked { state in
            guard state.gate.acknowledged(count) else { return }
            if let context = state.context { lws_cancel_service(context.pointer) }
        }
    }

    /// Closes the connection with 1000 (normal closure) and ends ``events``.
    public func stop() {
        let started = shared.locked { state -> Bool in
            state.stopRequested = true
            if let context = state.context { lws_cancel_service(context.pointer) }
            return state.started
        }
        if !started { continuation.finish() }
    }

    /// The counters and state now.
    public var statistics: WebSocketClientStatistics { shared.locked { $0.statistics } }

    func updateStatistics(_ change: (inout WebSocketClientStatistics) -> Void) {
        shared.locked { change(&$0.statistics) }
    }
}

/// A client that could not start.
public struct WebSocketClientError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// The C memory an lws context (client or server) points into: allocated when its service thread starts, freed
/// only after `lws_context_destroy`, when the last reference goes.
final class LWSResources {
    let protocols: UnsafeMutablePointer<lws_protocols>
    let protocolName: UnsafeMutablePointer<CChar>
    /// Fires when the reconnect backoff is over.
    let reconnectTimer: UnsafeMutablePointer<sluice_lws_timer>
    /// Fires when a connection attempt has not completed its handshake in time.
    let handshakeTimer: UnsafeMutablePointer<sluice_lws_timer>
    /// Fires now and again while reading is paused, to keep the connection valid.
    let pausedTimer: UnsafeMutablePointer<sluice_lws_timer>
    let policy: UnsafeMutablePointer<lws_retry_bo_t>
    let retryTable: UnsafeMutablePointer<UInt32>
    var strings: [UnsafeMutablePointer<CChar>] = []

    init() {
        protocols = .allocate(capacity: 2)
        protocols.initialize(repeating: lws_protocols(), count: 2)
        protocolName = strdup("sluice")!
        reconnectTimer = .allocate(capacity: 1)
        reconnectTimer.initialize(to: sluice_lws_timer())
        handshakeTimer = .allocate(capacity: 1)
        handshakeTimer.initialize(to: sluice_lws_timer())
        pausedTimer = .allocate(capacity: 1)
        pausedTimer.initialize(to: sluice_lws_timer())
        policy = .allocate(capacity: 1)
        policy.initialize(to: lws_retry_bo_t())
        retryTable = .allocate(capacity: 1)
        retryTable.initialize(to: 1000)
    }

    /// A C copy of `text` that lives as long as these resources.
    func string(_ text: String) -> UnsafeMutablePointer<CChar> {
        let copy = strdup(text)!
        strings.append(copy)
        return copy
    }

    deinit {
        protocols.deinitialize(count: 2)
        protocols.deallocate()
        free(protocolName)
        for timer in [reconnectTimer, handshakeTimer, pausedTimer] {
            timer.deinitialize(count: 1)
            timer.deallocate()
        }
        policy.deinitialize(count: 1)
        policy.deallocate()
        retryTable.deinitialize(count: 1)
        retryTable.deallocate()
        for string in strings { free(string) }
    }
}
