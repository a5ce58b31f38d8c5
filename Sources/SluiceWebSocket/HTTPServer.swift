internal import CLibWebSockets
internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// A request as a ``HTTPServerHandler`` sees it.
public struct HTTPRequest: Sendable, Equatable {
    /// The path without its query, as sent (`/api/tap`).
    public var path: String
    /// The query's arguments, decoded; a name given twice keeps its last value.
    public var query: [String: String]
    /// The `Authorization` header, when sent.
    public var authorization: String?
    /// The `Cookie` header, when sent.
    public var cookie: String?

    public init(path: String, query: [String: String] = [:], authorization: String? = nil, cookie: String? = nil) {
        self.path = path
        self.query = query
        self.authorization = authorization
        self.cookie = cookie
    }
}

/// A complete response: status, type, body and any further headers.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]
    /// Further headers, for example `Set-Cookie` or `Location`: (name, value) pairs.
    public var headers: [HTTPHeader]

    public init(status: Int, contentType: String, body: [UInt8], headers: [HTTPHeader] = []) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.headers = headers
    }
}

/// One response header.
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// One WebSocket client of an ``HTTPServer``, for as long as it is connected.
public struct WebSocketConnection: Sendable, Hashable {
    public let id: UInt64
}

/// What an ``HTTPServer`` asks of its owner. Every method is called on the server's service thread and must
/// return quickly: it holds up every other client meanwhile.
public protocol HTTPServerHandler: AnyObject, Sendable {
    /// The response to a plain GET request.
    func respond(to request: HTTPRequest) -> HTTPResponse
    /// `nil` accepts a WebSocket upgrade request; a response refuses it with that status.
    func admit(_ request: HTTPRequest) -> HTTPResponse?
    /// An accepted WebSocket client is connected; messages for it go through ``HTTPServer/send(_:to:)``.
    func opened(_ connection: WebSocketConnection, for request: HTTPRequest)
    /// `count` messages for `connection` were dropped, the oldest first, because it did not keep up.
    func dropped(_ count: Int, for connection: WebSocketConnection)
    /// The client is gone: it left, was closed by ``HTTPServer/close(_:)``, or was lost.
    func closed(_ connection: WebSocketConnection)
}

/// Where an ``HTTPServer`` listens and how much it holds per client.
public struct HTTPServerOptions: Sendable {
    /// What to bind (see ``WebSocketServerOptions/host``); 127.0.0.1 unless written otherwise.
    public var host = "127.0.0.1"
    /// The port; 0 picks a free one.
    public var port = 8686
    /// Messages queued for one WebSocket client before its oldest are dropped.
    public var maxQueuedMessages = 256
    /// Seconds a client has to send its request.
    public var requestTimeoutSecs = 10

    public init() {}
}

/// HTTP and WebSocket on one port, on libwebsockets, served on a thread of its own: plain GET requests are
/// answered by the handler with complete responses; WebSocket clients get the messages their owner sends each of
/// them, through a bounded queue per client (a slow client loses its own oldest messages, never holding up the
/// sender or the others). What clients send on a WebSocket is read and ignored.
public final class HTTPServer: @unchecked Sendable {
    // @unchecked: `sessions`, `byConnection`, `responses`, `admitted`, `nextID` and `exitRequested` are touched only
    // on the service thread (run loop and callbacks); cross-thread state is in `shared` and `ended` (Mutexes); C
    // memory is ServerContext.serve's, freed after `lws_context_destroy`.

    let options: HTTPServerOptions
    let handler: any HTTPServerHandler
    let log: @Sendable (String) -> Void

    private enum Command {
        case send(WebSocketConnection, [[UInt8]])
        case close(WebSocketConnection)
    }

    private struct Shared {
        var context: WebSocketClient.ContextHandle?
        var commands: [Command] = []
        var stopRequested = false
    }

    private let shared = Mutex(Shared())
    private let started = StartGate()
    /// Set when the service thread has finished, with the tasks waiting in ``stop()`` for it.
    private let ended = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    private final class Session {
        let connection: WebSocketConnection
        var queue: [[UInt8]] = []
        var head = 0
        /// Set by ``HTTPServer/close(_:)``: the client is closed with 1000 once its queue is sent.
        var closeWhenSent = false
        var closeStatus = LWS_CLOSE_STATUS_NORMAL
        /// Set when the client sent a close frame: lws answers it, and nothing more is sent to it.
        var peerClosed = false

        init(connection: WebSocketConnection) { self.connection = connection }

        var queued: Int { queue.count - head }
    }

    /// A response being written: its body, from `offset` on.
    private final class PendingResponse {
        let body: [UInt8]
        var offset = 0
        init(body: [UInt8]) { self.body = body }
    }

    // MARK: Service thread only

    private var sessions: [UInt: Session] = [:]
    private var byConnection: [WebSocketConnection: UInt] = [:]
    private var responses: [UInt: PendingResponse] = [:]
    /// Upgrade requests accepted but not yet established, with the request they made.
    private var admitted: [UInt: HTTPRequest] = [:]
    private var nextID: UInt64 = 1
    private var exitRequested = false

    public init(options: HTTPServerOptions, handler: any HTTPServerHandler, log: @escaping @Sendable (String) -> Void) {
        self.options = options
        self.handler = handler
        self.log = log
    }

    /// Starts listening on a thread of its own; returns where it listens, read from the listening sockets.
    public func start() async throws(ServerError) -> ServerListening {
        let retained = Unmanaged.passRetained(self)
        do {
            try ServiceThread.start { retained.takeRetainedValue().run() }
        } catch {
            retained.release()
            throw ServerError(message: error.message)
        }
        return try await started.wait()
    }

    /// Queues `messages` for `connection`; from any thread. Messages for a client that is gone are ignored.
    public func send(_ messages: [[UInt8]], to connection: WebSocketConnection) {
        guard !messages.isEmpty else { return }
        post(.send(connection, messages))
    }

    /// Closes `connection` with 1000 once what is queued for it is sent; from any thread.
    public func close(_ connection: WebSocketConnection) { post(.close(connection)) }

    private func post(_ command: Command) {
        shared.locked { state in
            state.commands.append(command)
            if let context = state.context { lws_cancel_service(context.pointer) }
        }
    }

    /// Closes every WebSocket client with 1001 (going away) once its queue is sent (a client that does not read is
    /// cut off after two seconds), stops listening, and returns when the service thread has ended: what was sent
    /// before, a final report say, has then reached the clients' sockets.
    public func stop() async {
        shared.locked { state in
            state.stopRequested = true
            if let context = state.context { lws_cancel_service(context.pointer) }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = ended.locked { ended -> Bool in
                if !ended.done { ended.waiters.append(continuation) }
                return ended.done
            }
            if done { continuation.resume() }
        }
    }

    // MARK: - Run loop

    private func run() {
        ServerContext.serve(
            ServerContext.Endpoint(
                host: options.host, port: options.port, certFile: nil, keyFile: nil,
                timeoutSecs: options.requestTimeoutSecs),
            callback: httpServerCallback, owner: self, log: log, started: started,
            setContext: { context in shared.locked { $0.context = context } }, isFinished: { exitRequested })
        let waiters = ended.locked { ended -> [CheckedContinuation<Void, Never>] in
            ended.done = true
            defer { ended.waiters = [] }
            return ended.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: - Callbacks

    fileprivate func handle(
        _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ input: UnsafeMutableRawPointer?, _ length: Int
    ) -> Int32 {
        let key = UInt(bitPattern: wsi.map { Int(bitPattern: UnsafeRawPointer($0)) } ?? 0)
        switch reason {
        case LWS_CALLBACK_HTTP:
            guard lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0 else {
                return begin(wsi, key, HTTPResponse.text(405, "only GET is served\n"))
            }
            return begin(wsi, key, handler.respond(to: request(wsi)))
        case LWS_CALLBACK_HTTP_WRITEABLE:
            return continueResponse(wsi, key)
        case LWS_CALLBACK_CLOSED_HTTP:
            responses[key] = nil
            admitted[key] = nil
        case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
            // The one point where an upgrade can still be refused with an HTTP status (lws closes after it).
            let request = request(wsi)
            if shared.locked({ $0.stopRequested }) {
                return refuse(wsi, key, HTTPResponse.text(503, "stopping\n"))
            }
            if let refusal = handler.admit(request) { return refuse(wsi, key, refusal) }
            admitted[key] = request
        case LWS_CALLBACK_ESTABLISHED:
            let connection = WebSocketConnection(id: nextID)
            nextID += 1
            sessions[key] = Session(connection: connection)
            byConnection[connection] = key
            handler.opened(connection, for: admitted.removeValue(forKey: key) ?? HTTPRequest(path: "/"))
        case LWS_CALLBACK_CLOSED:
            admitted[key] = nil
            if let session = sessions.removeValue(forKey: key) {
                byConnection[session.connection] = nil
                handler.closed(session.connection)
            }
            if shared.locked({ $0.stopRequested }), sessions.isEmpty, let context = wsi.flatMap(lws_get_context) {
                exitRequested = true
                lws_cancel_service(context)
            }
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            // The client is leaving: what is still queued for it will never be sent (lws sends the close reply at
            // the next writeable moment, ahead of any data).
            guard let session = sessions[key] else { break }
            session.peerClosed = true
            session.queue.removeAll()
            session.head = 0
        case LWS_CALLBACK_SERVER_WRITEABLE:
            guard let session = sessions[key], !session.peerClosed else { break }
            while session.queued > 0, lws_send_pipe_choked(wsi) == 0 {
                let message = session.queue[session.head]
                session.queue[session.head] = []
                session.head += 1
                if !writeMessage(wsi, message) { return -1 }
            }
            if session.queued > 0 {
                lws_callback_on_writable(wsi)
            } else {
                session.queue.removeAll(keepingCapacity: true)
                session.head = 0
                if session.closeWhenSent {
                    closeWith(
                        wsi, session.closeStatus,
                        session.closeStatus == LWS_CLOSE_STATUS_NORMAL ? "done" : "server stopping")
                    return -1
                }
            }
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            guard let context = wsi.flatMap(lws_get_context) else { break }
            let (commands, stop) = shared.locked { state -> ([Command], Bool) in
                defer { state.commands.removeAll(keepingCapacity: true) }
                return (state.commands, state.stopRequested)
            }
            for command in commands { apply(command) }
            if stop {
                for (key, session) in sessions where !session.closeWhenSent {
                    session.closeWhenSent = true
                    session.closeStatus = LWS_CLOSE_STATUS_GOINGAWAY
                    // A client that does not read is cut off after two seconds, so it cannot hold up the stop.
                    let wsi = OpaquePointer(bitPattern: key)
                    lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, 2)
                    lws_callback_on_writable(wsi)
                }
                if sessions.isEmpty {
                    exitRequested = true
                    lws_cancel_service(context)
                }
            }
        default:
            break
        }
        return lws_callback_http_dummy(wsi, reason, nil, input, length)
    }

    private func apply(_ command: Command) {
        switch command {
        case .send(let connection, let messages):
            guard let key = byConnection[connection], let session = sessions[key], !session.closeWhenSent,
                !session.peerClosed
            else { return }
            session.queue.append(contentsOf: messages)
            let excess = session.queued - options.maxQueuedMessages
            if excess > 0 {
                session.head += excess
                if session.head > 1024, session.head * 2 > session.queue.count {
                    session.queue.removeFirst(session.head)
                    session.head = 0
                }
                handler.dropped(excess, for: connection)
            }
            lws_callback_on_writable(OpaquePointer(bitPattern: key))
        case .close(let connection):
            guard let key = byConnection[connection], let session = sessions[key] else { return }
            session.closeWhenSent = true
            lws_callback_on_writable(OpaquePointer(bitPattern: key))
        }
    }

    /// The request `wsi` made: its path, decoded query arguments and the headers the handler may need.
    private func request(_ wsi: OpaquePointer?) -> HTTPRequest {
        var result = HTTPRequest(path: header(wsi, WSI_TOKEN_GET_URI) ?? "/")
        var index: Int32 = 0
        var buffer = [CChar](repeating: 0, count: 4096)
        // lws splits the query at '&' into fragments and decodes each.
        while lws_hdr_copy_fragment(wsi, &buffer, Int32(buffer.count), WSI_TOKEN_HTTP_URI_ARGS, index) >= 0 {
            let argument = Self.text(buffer)
            if let equals = argument.firstIndex(of: "=") {
                result.query[String(argument[..<equals])] = String(argument[argument.index(after: equals)...])
            } else {
                result.query[argument] = ""
            }
            index += 1
        }
        result.authorization = header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION)
        result.cookie = header(wsi, WSI_TOKEN_HTTP_COOKIE)
        return result
    }

    private func header(_ wsi: OpaquePointer?, _ token: lws_token_indexes) -> String? {
        let length = lws_hdr_total_length(wsi, token)
        guard length > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(length) + 1)
        guard lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token) >= 0 else { return nil }
        return Self.text(buffer)
    }

    /// The text lws copied into `buffer`, up to its terminating zero (invalid UTF-8 repaired).
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Writes `response`'s status line and headers, and asks to write its body when the socket takes it.
    private func begin(_ wsi: OpaquePointer?, _ key: UInt, _ response: HTTPResponse) -> Int32 {
        guard writeHeaders(wsi, response) else { return -1 }
        if response.body.isEmpty { return lws_http_transaction_completed(wsi) != 0 ? -1 : 0 }
        responses[key] = PendingResponse(body: response.body)
        lws_callback_on_writable(wsi)
        return 0
    }

    /// Writes the status line and headers of `response`; false when lws could not.
    private func writeHeaders(_ wsi: OpaquePointer?, _ response: HTTPResponse) -> Bool {
        let pre = sluice_lws_pre()
        var buffer = [UInt8](repeating: 0, count: pre + 4096)
        let failed = buffer.withUnsafeMutableBufferPointer { raw -> Bool in
            let start = raw.baseAddress! + pre
            let end = raw.baseAddress! + raw.count
            var position: UnsafeMutablePointer<UInt8>? = start
            guard
                lws_add_http_common_headers(
                    wsi, UInt32(response.status), response.contentType, lws_filepos_t(response.body.count),
                    &position, end) == 0
            else { return true }
            for header in response.headers + [HTTPHeader("Cache-Control", "no-store")] {
                var value = Array(header.value.utf8)
                guard
                    lws_add_http_header_by_name(
                        wsi, header.name.lowercased() + ":", &value, Int32(value.count), &position, end) == 0
                else { return true }
            }
            return lws_finalize_write_http_header(wsi, start, &position, end) != 0
        }
        return !failed
    }

    /// Writes the next part of a response's body; after the last, the connection waits for its next request.
    private func continueResponse(_ wsi: OpaquePointer?, _ key: UInt) -> Int32 {
        guard let pending = responses[key] else { return 0 }
        let pre = sluice_lws_pre()
        let count = min(pending.body.count - pending.offset, 32 << 10)
        let final = pending.offset + count == pending.body.count
        var chunk = [UInt8](repeating: 0, count: pre + count)
        chunk.replaceSubrange(pre..., with: pending.body[pending.offset..<(pending.offset + count)])
        let written = chunk.withUnsafeMutableBufferPointer { buffer in
            lws_write(wsi, buffer.baseAddress! + pre, count, final ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP)
        }
        if written < count { return -1 }
        pending.offset += count
        if !final {
            lws_callback_on_writable(wsi)
            return 0
        }
        responses[key] = nil
        return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
    }

    /// Refuses an upgrade request with `response` (a short one: its body is written at once, and lws closes the
    /// connection after it).
    private func refuse(_ wsi: OpaquePointer?, _ key: UInt, _ response: HTTPResponse) -> Int32 {
        guard writeHeaders(wsi, response) else { return -1 }
        let pre = sluice_lws_pre()
        var body = [UInt8](repeating: 0, count: pre) + response.body
        _ = body.withUnsafeMutableBufferPointer { buffer in
            lws_write(wsi, buffer.baseAddress! + pre, response.body.count, LWS_WRITE_HTTP_FINAL)
        }
        return 1
    }
}

extension HTTPResponse {
    /// A plain-text response.
    public static func text(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", body: Array(text.utf8))
    }
}

private func httpServerCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
    _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    guard let wsi, let context = lws_get_context(wsi), let owner = lws_context_user(context) else {
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
    return Unmanaged<HTTPServer>.fromOpaque(owner).takeUnretainedValue().handle(wsi, reason, input, length)
}
