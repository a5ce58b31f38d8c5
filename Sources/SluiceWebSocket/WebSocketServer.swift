internal import CLibWebSockets
internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// Where a ``WebSocketServer`` listens and how it treats clients.
public struct WebSocketServerOptions: Sendable {
    /// What to bind: an IPv4 or IPv6 address, `*` (every interface, both families), an interface name or a host
    /// name (see ``ListenAddress/resolve(_:)``); 127.0.0.1 unless written otherwise.
    public var host = "127.0.0.1"
    /// The port; 0 picks a free one (see ``WebSocketServer/start()``).
    public var port = 8765
    /// Only this request path is accepted, when given.
    public var path: String?
    /// PEM certificate and key for wss://.
    public var certFile: String?
    public var keyFile: String?
    /// Messages queued per client before its oldest are dropped (broadcast).
    public var maxClientBufferMessages = 1000
    /// Messages from a client larger than this are discarded and the client is closed with 1009.
    public var maxMessageBytes = 16 << 20
    /// Received messages not yet acknowledged at which the server stops reading from clients.
    public var highWaterMessages = 4096
    /// Clients connected at once; further handshakes are refused.
    public var maxClients = 1000
    /// Data frames a client may send in one second before it is closed with 1008.
    public var maxClientFramesPerSec = 10_000
    /// Seconds a client has to send its upgrade request and complete the handshake.
    public var handshakeTimeoutSecs = 10

    public init() {}
}

/// Counters of a server, for metrics.
public struct WebSocketServerStatistics: Sendable, Equatable {
    /// Clients connected now.
    public var clients = 0
    /// Clients that ever connected.
    public var clientsTotal = 0
    /// Messages dropped from slow clients' queues, summed over clients.
    public var slowClientDroppedTotal = 0
    /// Messages still queued for a client when its connection ended (it closed, was cut off, or was lost), which
    /// it will never get.
    public var disconnectedClientDroppedTotal = 0
    /// Clients that left with a close handshake they began.
    public var disconnectedNormalTotal = 0
    /// Clients the server closed: for a broken limit, or because it was stopping.
    public var disconnectedByServerTotal = 0
    /// Clients whose connection ended without a close handshake (reset, lost, timed out).
    public var disconnectedLostTotal = 0
    /// Bytes received from clients.
    public var receivedBytesTotal = 0
    /// Handshakes refused because `maxClients` were connected.
    public var refusedTooManyTotal = 0
    /// Handshakes refused because they asked for another path.
    public var refusedWrongPathTotal = 0
    /// Clients closed (1008) for sending more than `maxClientFramesPerSec`.
    public var droppedTooManyFramesTotal = 0
    /// Clients closed (1009) for sending a message over `maxMessageBytes`.
    public var droppedOversizeTotal = 0
}

/// What a server reports to its consumer (messages clients sent).
public enum WebSocketServerEvent: Sendable {
    /// The complete messages of one service pass, from any clients.
    case messages([WebSocketMessage])
    /// A client's message went over the size limit and was discarded.
    case oversize(bytes: Int)
}

/// A WebSocket server on libwebsockets: it broadcasts messages to every client, each through its own bounded
/// queue (a slow client loses its own oldest messages, never slowing the others), and delivers what clients send
/// as batches on ``events``, pausing reads while the consumer is behind.
public final class WebSocketServer: @unchecked Sendable {
    // @unchecked: `sessions`, `pending`, `paused`, `exitRequested` and `reportedLimits` are touched only on the
    // service thread (run loop and callbacks); cross-thread state is in `shared` (a Mutex); C memory is
    // ServerContext.serve's, freed after `lws_context_destroy`.

    /// Messages from clients, ending when the server stops.
    public let events: AsyncStream<WebSocketServerEvent>
    let continuation: AsyncStream<WebSocketServerEvent>.Continuation
    let options: WebSocketServerOptions
    let log: @Sendable (String) -> Void

    struct Shared {
        var context: WebSocketClient.ContextHandle?
        var outbox: [[UInt8]] = []
        /// The producer, waiting because the outbox was full (the service thread is behind).
        var outboxWaiter: CheckedContinuation<Void, Never>?
        var stopRequested = false
        var gate: ReadGate
        var statistics = WebSocketServerStatistics()
    }

    let shared: Mutex<Shared>
    private let started = StartGate()

    final class Session {
        var queue: [[UInt8]] = []
        var head = 0
        var assembler: MessageAssembler
        /// Set when the client broke a limit: it is closed with this at its next writeable callback, and nothing
        /// more it sends is taken.
        var closing: (status: lws_close_status, reason: String)?
        /// Set when the client sent a close frame: lws answers it at once, and nothing more is sent to it.
        var peerClosed = false
        /// Set when the server began closing this client (a broken limit, or stopping).
        var closedByServer = false
        /// Messages queued since the client's last writeable callback: it has not yet been offered them.
        var unoffered = 0
        /// The one-second window frames are counted in.
        var windowStartNanos = monotonicNanos()
        var framesInWindow = 0

        init(maxMessageBytes: Int) { assembler = MessageAssembler(maxMessageBytes: maxMessageBytes) }

        var queued: Int { queue.count - head }

        /// Drops the oldest queued messages until at most `limit` remain; returns how many it dropped.
        func trim(to limit: Int) -> Int {
            let excess = max(0, queued - limit)
            head += excess
            if head > 4096, head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            return excess
        }

        /// Counts a completed frame; true while the client stays within `limit` frames per second.
        func countFrame(limit: Int) -> Bool {
            let now = monotonicNanos()
            if now &- windowStartNanos >= 1_000_000_000 {
                windowStartNanos = now
                framesInWindow = 0
            }
            framesInWindow += 1
            return framesInWindow <= limit
        }
    }

    // MARK: Service thread only

    var sessions: [UInt: Session] = [:]
    var pending: [WebSocketMessage] = []
    var paused = false
    var exitRequested = false
    /// Set when the outbox was left for a client still to be offered its last batch (see ``outboxMustWait()``).
    var outboxDeferred = false
    /// Limits already reported on stderr: each is said once, then only counted.
    var reportedLimits: Set<String> = []

    public init(options: WebSocketServerOptions, log: @escaping @Sendable (String) -> Void) {
        self.options = options
        self.log = log
        shared = Mutex(Shared(gate: ReadGate(highWater: options.highWaterMessages)))
        (events, continuation) = AsyncStream.makeStream(of: WebSocketServerEvent.self)
    }

    /// Starts listening on a thread of its own; returns where it listens, read from the listening sockets (the
    /// port is useful with port 0), or why it could not listen.
    public func start() async throws(ServerError) -> ServerListening {
        let retained = Unmanaged.passRetained(self)
        do {
            try ServiceThread.start { retained.takeRetainedValue().run() }
        } catch {
            retained.release()
            continuation.finish()
            throw ServerError(message: error.message)
        }
        return try await started.wait()
    }

    /// Queues `messages` (encoded text) for every connected client. A slow client never makes this wait (it loses
    /// its own oldest messages); the server itself does: while the service thread has not yet moved what came
    /// before into the clients' queues (an outbox of more than ``outboxLimit`` messages), the producer waits, so
    /// that a sink that cannot keep up pushes back on the pipeline instead of losing events.
    public func broadcast(_ messages: [[UInt8]]) async {
        let full = shared.locked { state -> Bool in
            state.outbox.append(contentsOf: messages)
            if let context = state.context { lws_cancel_service(context.pointer) }
            return state.outbox.count > outboxLimit && !state.stopRequested
        }
        guard full else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let parked = shared.locked { state -> Bool in
                // Re-checked: the service thread may have taken the outbox since.
                guard state.outbox.count > outboxLimit, !state.stopRequested else { return false }
                state.outboxWaiter = continuation
                return true
            }
            if !parked { continuation.resume() }
        }
    }

    /// Messages waiting for the service thread past which ``broadcast(_:)`` waits.
    var outboxLimit: Int { max(options.maxClientBufferMessages, 1024) * 4 }

    /// Reports that `count` delivered messages were passed on; reading resumes once few enough are outstanding.
    public func acknowledge(_ count: Int) {
        shared.locked { state in
            guard state.gate.acknowledged(count) else { return }
            if let context = state.context { lws_cancel_service(context.pointer) }
        }
    }

    /// Closes every client with 1001 (going away), stops listening and ends ``events``.
    public func stop() {
        let waiter = shared.locked { state -> CheckedContinuation<Void, Never>? in
            state.stopRequested = true
            if let context = state.context { lws_cancel_service(context.pointer) }
            defer { state.outboxWaiter = nil }
            return state.outboxWaiter
        }
        waiter?.resume()
    }

    /// The counters now.
    public var statistics: WebSocketServerStatistics { shared.locked { $0.statistics } }

    // MARK: - Run loop

    private func run() {
        ServerContext.serve(
            ServerContext.Endpoint(
                host: options.host, port: options.port, certFile: options.certFile, keyFile: options.keyFile,
                timeoutSecs: options.handshakeTimeoutSecs),
            callback: serverCallback, owner: self, log: log, started: started,
            setContext: { context in shared.locked { $0.context = context } }, isFinished: { exitRequested },
            afterEachPass: deliverPending)
        continuation.finish()
    }

    private func deliverPending(_ context: OpaquePointer) {
        guard !pending.isEmpty else { return }
        let batch = pending
        pending.removeAll(keepingCapacity: true)
        let behind = shared.locked { $0.gate.delivered(batch.count) }
        continuation.yield(.messages(batch))
        if behind, !paused {
            paused = true
            for key in sessions.keys { lws_rx_flow_control(OpaquePointer(bitPattern: key), 0) }
        }
    }

    // MARK: - Callbacks

    func handle(_ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ input: UnsafeMutableRawPointer?, _ length: Int)
        -> Int32
    {
        let key = UInt(bitPattern: wsi.map { Int(bitPattern: UnsafeRawPointer($0)) } ?? 0)
        switch reason {
        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
            if let path = options.path {
                var buffer = [CChar](repeating: 0, count: 1024)
                let count = lws_hdr_copy(wsi, &buffer, Int32(buffer.count), WSI_TOKEN_GET_URI)
                let uri =
                    count > 0
                    ? String(decoding: buffer.prefix(Int(count)).map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
                if uri != path {
                    shared.locked { $0.statistics.refusedWrongPathTotal += 1 }
                    return 1
                }
            }
            if sessions.count >= options.maxClients {
                shared.locked { $0.statistics.refusedTooManyTotal += 1 }
                reportOnce("max_clients", "\(options.maxClients) clients are connected (max_clients); refusing more")
                return 1
            }
        case LWS_CALLBACK_ESTABLISHED:
            sessions[key] = Session(maxMessageBytes: options.maxMessageBytes)
            shared.locked { state in
                state.statistics.clients += 1
                state.statistics.clientsTotal += 1
            }
            if paused { lws_rx_flow_control(wsi, 0) }
        case LWS_CALLBACK_CLOSED:
            if let session = sessions.removeValue(forKey: key) {
                shared.locked { state in
                    state.statistics.clients -= 1
                    // A client cut off (a stalled one at a stop) or lost never gets what was still queued for it.
                    state.statistics.disconnectedClientDroppedTotal += session.queued
                    if session.peerClosed {
                        state.statistics.disconnectedNormalTotal += 1
                    } else if session.closedByServer {
                        state.statistics.disconnectedByServerTotal += 1
                    } else {
                        state.statistics.disconnectedLostTotal += 1
                    }
                }
            }
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            // The client is leaving: lws sends the close reply at its next writeable moment, ahead of any data (it
            // no longer asks us for any), so what is still queued for this client is dropped and counted now.
            guard let session = sessions[key], !session.peerClosed else { break }
            session.peerClosed = true
            let dropped = session.queued
            session.queue.removeAll()
            session.head = 0
            if dropped > 0 { shared.locked { $0.statistics.disconnectedClientDroppedTotal += dropped } }
            lws_callback_on_writable(wsi)
        case LWS_CALLBACK_RECEIVE:
            guard let session = sessions[key], session.closing == nil else { break }
            shared.locked { $0.statistics.receivedBytesTotal += length }
            if lws_remaining_packet_payload(wsi) == 0, !session.countFrame(limit: options.maxClientFramesPerSec) {
                shared.locked { $0.statistics.droppedTooManyFramesTotal += 1 }
                reportOnce(
                    "frames",
                    "a client sent more than \(options.maxClientFramesPerSec) frames in a second; closing it (1008)")
                close(session, wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, "too many frames")
                break
            }
            switch session.assembler.receive(wsi, input, length) {
            case .incomplete: break
            case .message(let message): pending.append(message)
            case .oversize(let size):
                continuation.yield(.oversize(bytes: size))
                shared.locked { $0.statistics.droppedOversizeTotal += 1 }
                close(session, wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, "message too large")
            }
        case LWS_CALLBACK_SERVER_WRITEABLE:
            guard let session = sessions[key], !session.peerClosed else { break }
            if let closing = session.closing {
                // lws sends the close frame; a client still sending usually sees a reset instead (1006), as
                // the kernel resets a connection closed with data unread.
                closeWith(wsi, closing.status, closing.reason)
                return -1
            }
            while session.queued > 0, lws_send_pipe_choked(wsi) == 0 {
                let message = session.queue[session.head]
                session.queue[session.head] = []
                session.head += 1
                if !writeMessage(wsi, message) { return -1 }
            }
            // What the socket could not take now is held up to the client's limit, its oldest dropped beyond it.
            let dropped = session.trim(to: options.maxClientBufferMessages)
            if dropped > 0 { shared.locked { $0.statistics.slowClientDroppedTotal += dropped } }
            session.unoffered = 0
            if session.queued == 0 {
                session.queue.removeAll(keepingCapacity: true)
                session.head = 0
                // Stopping: a client is closed once it has everything handed to the server: its queue is empty,
                // and so is the outbox (whose last messages the next wake-up moves into the queues).
                if shared.locked({ $0.stopRequested && $0.outbox.isEmpty }) {
                    session.closedByServer = true
                    closeWith(wsi, LWS_CLOSE_STATUS_GOINGAWAY, "server stopping")
                    return -1
                }
            } else {
                lws_callback_on_writable(wsi)
            }
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            guard let context = wsi.flatMap({ lws_get_context($0) }) else { break }
            // The outbox waits (and so does the producer) while a client has not been offered the last batch;
            // the writeable callback that offers it wakes the service again.
            outboxDeferred = outboxMustWait()
            let (messages, stop, stillPaused, producer) = shared.locked {
                state -> ([[UInt8]], Bool, Bool, CheckedContinuation<Void, Never>?) in
                if outboxDeferred { return ([], state.stopRequested, state.gate.paused, nil) }
                defer {
                    state.outbox.removeAll(keepingCapacity: true)
                    state.outboxWaiter = nil
                }
                return (state.outbox, state.stopRequested, state.gate.paused, state.outboxWaiter)
            }
            // The outbox is empty again: a producer waiting for room goes on.
            producer?.resume()
            if !messages.isEmpty, !sessions.isEmpty { enqueue(messages, context: context, protocolOf: wsi) }
            if stop {
                if sessions.isEmpty {
                    exitRequested = true
                    lws_cancel_service(context)
                } else {
                    // Each client gets what is queued for it, then a 1001 close; one that does not read is cut
                    // off after two seconds, so a stalled client cannot hold up the shutdown.
                    for (key, session) in sessions {
                        session.closedByServer = true
                        lws_set_timeout(OpaquePointer(bitPattern: key), PENDING_TIMEOUT_USER_OK, 2)
                    }
                    lws_callback_on_writable_all_protocol(context, lws_get_protocol(wsi))
                }
                break
            }
            if !stillPaused, paused {
                paused = false
                for (key, session) in sessions where session.closing == nil {
                    lws_rx_flow_control(OpaquePointer(bitPattern: key), 1)
                }
            }
        default:
            break
        }
        // A client offered its batch, leaving or gone may be the last one the outbox waited for.
        if outboxDeferred,
            reason == LWS_CALLBACK_SERVER_WRITEABLE || reason == LWS_CALLBACK_CLOSED
                || reason == LWS_CALLBACK_WS_PEER_INITIATED_CLOSE,
            !outboxMustWait(), let context = wsi.flatMap({ lws_get_context($0) })
        {
            outboxDeferred = false
            lws_cancel_service(context)
        }
        if reason == LWS_CALLBACK_CLOSED, shared.locked({ $0.stopRequested }), sessions.isEmpty,
            let context = wsi.flatMap({ lws_get_context($0) })
        {
            exitRequested = true
            lws_cancel_service(context)
        }
        return lws_callback_http_dummy(wsi, reason, nil, input, length)
    }

    /// Closes a client that broke a limit: what it sends from now on is thrown away, and the connection is closed
    /// when it is next writeable.
    private func close(_ session: Session, _ wsi: OpaquePointer?, _ status: lws_close_status, _ reason: String) {
        session.closing = (status, reason)
        session.closedByServer = true
        lws_callback_on_writable(wsi)
        // A client that does not read would never take the close: cut it off after two seconds.
        lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, 2)
    }

    /// True while a client whose socket takes data has not yet been offered the messages last queued for it. The
    /// next batch then waits in the outbox: queued now, it would push that batch past the client's limit before
    /// the client had a chance at it, and a client that keeps up would lose messages to the service's timing. A
    /// client whose socket is full is not waited for: it is slow, and its oldest messages go beyond its limit.
    private func outboxMustWait() -> Bool {
        sessions.contains { key, session in
            session.unoffered > 0 && !session.peerClosed && session.closing == nil
                && lws_send_pipe_choked(OpaquePointer(bitPattern: key)) == 0
        }
    }

    /// Logs a broken limit the first time only; the metrics count every time.
    private func reportOnce(_ limit: String, _ message: String) {
        if reportedLimits.insert(limit).inserted { log(message) }
    }

    /// Adds `messages` to every client's queue. The limit is applied once a client has been offered them (in its
    /// writeable callback), so that a client that keeps up never loses part of a batch larger than its limit; until
    /// then a client holds at most its limit plus this batch, and loses its oldest messages beyond that.
    private func enqueue(_ messages: [[UInt8]], context: OpaquePointer, protocolOf wsi: OpaquePointer?) {
        var dropped = 0
        for session in sessions.values where !session.peerClosed {
            session.queue.append(contentsOf: messages)
            session.unoffered += messages.count
            dropped += session.trim(to: options.maxClientBufferMessages + messages.count)
        }
        if dropped > 0 { shared.locked { $0.statistics.slowClientDroppedTotal += dropped } }
        lws_callback_on_writable_all_protocol(context, lws_get_protocol(wsi))
    }
}

private func serverCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
    _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    guard let wsi, let context = lws_get_context(wsi), let owner = lws_context_user(context) else {
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
    return Unmanaged<WebSocketServer>.fromOpaque(owner).takeUnretainedValue().handle(wsi, reason, input, length)
}
