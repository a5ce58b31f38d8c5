internal import CLibWebSockets
internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// Routes libwebsockets' own log lines (errors and warnings only) into Sluice's logging: TLS failures are only
/// explained there. lws 4.1's log callback is process-wide and says nothing of the context that logged, but every
/// lws call of a context happens on that context's service thread, so a line is routed by the thread it was
/// logged on to the component that owns that thread. A line equal to the previous one of the same component is not
/// repeated, so a feed failing the same way on every retry is reported once.
enum LWSLog {
    private struct Route {
        let sink: @Sendable (String) -> Void
        var last: String?
    }

    private struct State {
        var installed = false
        /// By service thread.
        var routes: [pthread_t: Route] = [:]
        /// For a line logged on a thread that is no service thread (none is expected): the latest service thread's.
        var latest: pthread_t?
    }

    private static let state = Mutex(State())

    /// Sends what lws logs on the calling thread (a service thread, before its context exists) to `log`, until
    /// ``remove()`` is called on the same thread.
    static func route(to log: @escaping @Sendable (String) -> Void) {
        let thread = pthread_self()
        let first = state.locked { state -> Bool in
            state.routes[thread] = Route(sink: log)
            state.latest = thread
            defer { state.installed = true }
            return !state.installed
        }
        if first { lws_set_log_level(Int32(LLL_ERR | LLL_WARN), emit) }
    }

    /// Stops routing the calling thread's lines, after its context is destroyed.
    static func remove() {
        let thread = pthread_self()
        state.locked { state in
            state.routes[thread] = nil
            if state.latest == thread { state.latest = state.routes.keys.first }
        }
    }

    fileprivate static func forward(_ line: String) {
        let thread = pthread_self()
        let sink = state.locked { state -> (@Sendable (String) -> Void)? in
            guard let owner = state.routes[thread] != nil ? thread : state.latest, var route = state.routes[owner],
                route.last != line
            else { return nil }
            route.last = line
            state.routes[owner] = route
            return route.sink
        }
        sink?(line)
    }
}

private func emit(_ level: Int32, _ line: UnsafePointer<CChar>?) {
    guard let line else { return }
    var text = String(cString: line)
    while text.last == "\n" { text.removeLast() }
    LWSLog.forward("libwebsockets: \(text)")
}
