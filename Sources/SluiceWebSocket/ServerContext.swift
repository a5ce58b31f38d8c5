internal import CLibWebSockets
internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// Where a started server listens, read from its sockets.
public struct ServerListening: Sendable, Equatable {
    /// The port every socket listens on.
    public var port: Int
    /// Each listening socket's address and port as the kernel reports it: `127.0.0.1:8765`, `[::1]:8765`.
    public var addresses: [String]
}

/// A server that could not start.
public struct ServerError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// A protocol callback as lws calls it.
typealias LWSCallback =
    @convention(c) (
        OpaquePointer?, lws_callback_reasons, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int
    ) -> Int32

/// The service thread shared by ``WebSocketServer`` and ``HTTPServer``: a libwebsockets context with one vhost per
/// address a host resolves to, all on one port, the addresses read back from the kernel, the service loop, and the
/// one path that frees it all.
enum ServerContext {
    /// What to listen on.
    struct Endpoint {
        var host: String
        var port: Int
        var certFile: String?
        var keyFile: String?
        /// Seconds lws gives its own round trips (a handshake's, a close's) and an unfinished request.
        var timeoutSecs: Int
    }

    /// A server's whole service thread, on one path: routes lws' log, creates the context and its listeners
    /// (callbacks reach `owner` through `lws_context_user`), gives `setContext` the context for other threads'
    /// `lws_cancel_service` before `started` hears that it listens, services it, calling `afterEachPass` after each
    /// `lws_service`, until `isFinished`, then destroys the context and only then frees the C memory it pointed into.
    /// A failure to listen reaches `started` once the context is destroyed.
    static func serve(
        _ endpoint: Endpoint, callback: LWSCallback, owner: AnyObject,
        log: @escaping @Sendable (String) -> Void,
        started: StartGate, setContext: (WebSocketClient.ContextHandle?) -> Void, isFinished: () -> Bool,
        afterEachPass: (OpaquePointer) -> Void = { _ in }
    ) {
        LWSLog.route(to: log)
        defer { LWSLog.remove() }
        let resources = LWSResources()
        resources.protocols[0].name = UnsafePointer(resources.protocolName)
        resources.protocols[0].callback = callback
        let (context, result) = open(
            endpoint, resources: resources, owner: Unmanaged.passUnretained(owner).toOpaque())
        if let context, case .success = result {
            setContext(.init(pointer: context))
            started.publish(result)
            while !isFinished() {
                lws_service(context, 0)
                afterEachPass(context)
            }
            setContext(nil)
        }
        if let context { lws_context_destroy(context) }
        // A failure is told only once the context is gone: the caller ends the run at once, and the process's exit
        // handlers (OpenSSL's free its locks) must not run while the context is being destroyed.
        if case .failure = result { started.publish(result) }
        // The context pointed into this memory until it was destroyed just above; only now may it be freed.
        withExtendedLifetime(resources) {}
    }

    /// Creates the context (its callbacks reach `owner` through `lws_context_user`) and its listeners. The context
    /// is returned whenever it was created, also on failure, for the caller to destroy on its one path.
    private static func open(_ endpoint: Endpoint, resources: LWSResources, owner: UnsafeMutableRawPointer)
        -> (OpaquePointer?, Result<ServerListening, ServerError>)
    {
        let addresses: [ListenAddress]
        switch ListenAddress.resolve(endpoint.host) {
        case .failure(let error): return (nil, .failure(error))
        case .success(let resolved): addresses = resolved
        }
        var context: OpaquePointer?
        // The sockets new between the two snapshots are this server's: no other server makes any meanwhile.
        let result = ListeningSockets.creation.locked { _ -> Result<ServerListening, ServerError> in
            let before = ListeningSockets.snapshot()
            context = createContext(endpoint, owner: owner)
            guard let context else {
                return .failure(ServerError(message: "cannot start a server (see the lws error above)"))
            }
            return listen(context, endpoint, on: addresses, resources: resources).flatMap { _ in
                boundAddresses(since: before)
            }
        }
        return (context, result)
    }

    /// A context with no listener of its own: each address gets a vhost (see ``listen(_:_:on:resources:)``).
    private static func createContext(_ endpoint: Endpoint, owner: UnsafeMutableRawPointer) -> OpaquePointer? {
        var info = lws_context_creation_info()
        info.options = UInt64(LWS_SERVER_OPTION_EXPLICIT_VHOSTS) | UInt64(LWS_SERVER_OPTION_VALIDATE_UTF8)
        if endpoint.certFile != nil { info.options |= UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT) }
        info.user = owner
        info.timeout_secs = UInt32(clamping: endpoint.timeoutSecs)
        return lws_create_context(&info)
    }

    /// Binds one vhost per address, all on one port (the first's, when the port is 0). Each vhost's options make
    /// lws bind exactly its family: IPv6 off for an IPv4 address, `IPV6_V6ONLY` on for an IPv6 one.
    private static func listen(
        _ context: OpaquePointer, _ endpoint: Endpoint, on addresses: [ListenAddress], resources: LWSResources
    ) -> Result<Int, ServerError> {
        var port = endpoint.port
        for (index, address) in addresses.enumerated() {
            var info = lws_context_creation_info()
            info.vhost_name = UnsafePointer(resources.string("sluice-\(index)"))
            info.port = Int32(port)
            info.iface = UnsafePointer(resources.string(address.numeric))
            info.protocols = UnsafePointer(resources.protocols)
            info.options =
                UInt64(LWS_SERVER_OPTION_VALIDATE_UTF8) | UInt64(LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND)
                | (address.isIPv6
                    ? UInt64(LWS_SERVER_OPTION_IPV6_V6ONLY_MODIFY) | UInt64(LWS_SERVER_OPTION_IPV6_V6ONLY_VALUE)
                    : UInt64(LWS_SERVER_OPTION_DISABLE_IPV6))
            // A connection that has not finished its request is closed after this long (a vhost setting).
            info.timeout_secs_ah_idle = UInt32(clamping: endpoint.timeoutSecs)
            if let cert = endpoint.certFile, let key = endpoint.keyFile {
                // lws reads this option from the vhost's info as well as the context's before it sets up TLS.
                info.options |= UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
                info.ssl_cert_filepath = UnsafePointer(resources.string(cert))
                info.ssl_private_key_filepath = UnsafePointer(resources.string(key))
            }
            guard let vhost = lws_create_vhost(context, &info), lws_get_vhost_listen_port(vhost) > 0 else {
                return .failure(
                    ServerError(message: "cannot listen on \(address.withPort(port)) (see the lws error above)"))
            }
            port = Int(lws_get_vhost_listen_port(vhost))
        }
        return .success(port)
    }

    /// The listening sockets opened since `before`, as the kernel reports them.
    private static func boundAddresses(since before: [UInt64: Int32]) -> Result<ServerListening, ServerError> {
        let bound = ListeningSockets.snapshot().filter { before[$0.key] == nil }.values.sorted()
            .compactMap(ListeningSockets.listeningAddress)
        guard let port = bound.first?.1, bound.allSatisfy({ $0.1 == port }) else {
            return .failure(ServerError(message: "the server's listening sockets could not be found"))
        }
        return .success(ServerListening(port: port, addresses: bound.map { $0.0.withPort($0.1) }))
    }
}

/// Hands a server's start result from its service thread to the task waiting in its `start()`, whichever comes
/// first.
final class StartGate: Sendable {
    private typealias Waiter = CheckedContinuation<Result<ServerListening, ServerError>, Never>
    private let state = Mutex<(result: Result<ServerListening, ServerError>?, waiter: Waiter?)>((nil, nil))

    /// On the service thread, once the server listens or could not.
    func publish(_ result: Result<ServerListening, ServerError>) {
        let waiter = state.locked { state -> Waiter? in
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: result)
    }

    /// The result, once published.
    func wait() async throws(ServerError) -> ServerListening {
        let result = await withCheckedContinuation { (continuation: Waiter) in
            let ready = state.locked { state -> Result<ServerListening, ServerError>? in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
        return try result.get()
    }
}
