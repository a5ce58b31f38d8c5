internal import CLibWebSockets
internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// Everything here runs on the client's service thread.
extension WebSocketClient {
    // MARK: - Run loop

    func run() {
        LWSLog.route(to: log)
        let resources = LWSResources()
        self.resources = resources
        resources.protocols[0].name = UnsafePointer(resources.protocolName)
        resources.protocols[0].callback = clientCallback
        resources.protocols[0].rx_buffer_size = 0

        var info = lws_context_creation_info()
        info.port = CONTEXT_PORT_NO_LISTEN
        info.protocols = UnsafePointer(resources.protocols)
        info.user = Unmanaged.passUnretained(self).toOpaque()
        info.options = UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
        if let caFile = options.caFile { info.client_ssl_ca_filepath = UnsafePointer(resources.string(caFile)) }
        info.connect_timeout_secs = UInt32(clamping: options.handshakeTimeoutSecs)
        info.timeout_secs = UInt32(clamping: options.handshakeTimeoutSecs)

        // lws pings after this much silence and hangs up after the idle timeout; our own backoff paces reconnects.
        let hangup = UInt16(clamping: max(1, options.idleTimeoutSecs))
        resources.policy.pointee.retry_ms_table = UnsafePointer(resources.retryTable)
        resources.policy.pointee.retry_ms_table_count = 1
        resources.policy.pointee.conceal_count = 0
        resources.policy.pointee.secs_since_valid_ping =
            options.pingIntervalSecs > 0 ? UInt16(clamping: options.pingIntervalSecs) : hangup &+ 1
        resources.policy.pointee.secs_since_valid_hangup = hangup
        resources.policy.pointee.jitter_percent = 0
        resources.reconnectTimer.pointee.owner = Unmanaged.passUnretained(self).toOpaque()
        resources.handshakeTimer.pointee.owner = Unmanaged.passUnretained(self).toOpaque()
        resources.pausedTimer.pointee.owner = Unmanaged.passUnretained(self).toOpaque()

        guard let context = lws_create_context(&info) else {
            continuation.yield(.gaveUp("libwebsockets could not create a context"))
            finishRun()
            return
        }
        shared.locked { $0.context = ContextHandle(pointer: context) }
        if shared.locked({ $0.stopRequested }) { exitRequested = true }
        connect(context)
        while !exitRequested {
            lws_service(context, 0)
            deliverPending()
        }
        shared.locked { $0.context = nil }
        lws_context_destroy(context)
        finishRun()
    }

    /// Runs after the context is gone (or was never made): frees the C memory and ends `events`.
    private func finishRun() {
        LWSLog.remove()
        updateStatistics { $0.state = .stopped }
        resources = nil
        continuation.finish()
    }

    /// Hands the messages of this pass to the consumer as one batch, and stops reading when it is too far behind.
    private func deliverPending() {
        guard !pending.isEmpty else { return }
        let batch = pending
        pending.removeAll(keepingCapacity: true)
        let behind = shared.locked { $0.gate.delivered(batch.count) }
        continuation.yield(.messages(batch))
        guard let wsi else { return }
        // Data is as good a sign of a live server as a pong: lws counts only pongs, and pings a busy feed otherwise.
        lws_validity_confirmed(wsi)
        if behind, !paused { pauseReading(wsi) }
    }

    /// Stops reading `wsi` while the consumer is behind. The silence that follows is ours, not the server's: lws
    /// would ping after `ping_interval_secs`, find no pong (it waits unread behind the data in the socket) and hang
    /// up, losing what was in flight; so the connection is held valid until reading resumes.
    private func pauseReading(_ wsi: OpaquePointer) {
        lws_rx_flow_control(wsi, 0)
        paused = true
        keepValidWhilePaused()
    }

    /// Reads `wsi` again; the idle clock starts over from now.
    private func resumeReading(_ wsi: OpaquePointer) {
        lws_rx_flow_control(wsi, 1)
        paused = false
        lws_validity_confirmed(wsi)
        if let resources { lws_sul_cancel(sul(resources.pausedTimer)) }
    }

    /// While reading is paused, confirms the connection now and again before lws would ping it.
    func keepValidWhilePaused() {
        guard paused, let wsi, let resources, let context = lws_get_context(wsi) else { return }
        lws_validity_confirmed(wsi)
        let silence =
            options.pingIntervalSecs > 0
            ? min(options.pingIntervalSecs, options.idleTimeoutSecs) : options.idleTimeoutSecs
        // Half the silence lws allows before it acts.
        let period = lws_usec_t(max(1, silence)) * 500_000
        lws_sul_schedule(context, 0, sul(resources.pausedTimer), pausedTimerFired, period)
    }

    // MARK: - Connecting

    func connect(_ context: OpaquePointer) {
        guard let resources, !shared.locked({ $0.stopRequested }) else {
            requestExit(context)
            return
        }
        updateStatistics { statistics in
            statistics.state = .connecting
            if attempts > 0 { statistics.reconnectAttemptsTotal += 1 }
        }
        httpStatus = 0
        peerCloseReason = nil
        var info = lws_client_connect_info()
        info.context = context
        info.address = UnsafePointer(resources.string(options.url.host))
        info.port = Int32(options.url.port)
        info.path = UnsafePointer(resources.string(options.url.path))
        let hostHeader =
            options.url.port == (options.url.secure ? 443 : 80)
            ? options.url.host : "\(options.url.host):\(options.url.port)"
        info.host = UnsafePointer(resources.string(hostHeader))
        info.origin = info.host
        if let subprotocol = options.subprotocol { info.protocol = UnsafePointer(resources.string(subprotocol)) }
        info.local_protocol_name = UnsafePointer(resources.protocolName)
        info.ietf_version_or_minus_one = -1
        info.retry_and_idle_policy = UnsafePointer(resources.policy)
        if options.url.secure {
            var flags = LCCSCF_USE_SSL.rawValue
            if options.insecureSkipVerify {
                flags |=
                    LCCSCF_ALLOW_SELFSIGNED.rawValue | LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK.rawValue
                    | LCCSCF_ALLOW_INSECURE.rawValue | LCCSCF_ALLOW_EXPIRED.rawValue
            }
            info.ssl_connection = Int32(flags)
        }
        handshakeTimedOut = false
        connecting = true
        guard let attempt = lws_client_connect_via_info(&info) else {
            attemptFailed(context, reason: "cannot start a connection to \(options.displayURL)")
            return
        }
        // lws' own timeouts do not cover a server that accepts and never answers the upgrade request; our timer
        // does, for the whole of TCP connect, TLS and HTTP handshake.
        connectingWsi = attempt
        lws_sul_schedule(
            context, 0, sul(resources.handshakeTimer), handshakeTimerFired,
            lws_usec_t(options.handshakeTimeoutSecs) * 1_000_000)
    }

    /// Gives up on a connection attempt that has not completed its handshake; lws then reports a connection error.
    func handshakeTimeout() {
        guard let attempt = connectingWsi else { return }
        handshakeTimedOut = true
        lws_set_timeout(attempt, PENDING_TIMEOUT_AWAITING_SERVER_RESPONSE, LWS_TO_KILL_ASYNC)
    }

    /// Ends the handshake watch: the attempt succeeded or failed.
    private func endHandshakeWatch() {
        connectingWsi = nil
        if let resources { lws_sul_cancel(sul(resources.handshakeTimer)) }
    }

    /// Retries after a connection attempt failed, once per attempt: lws may report one failure more than once
    /// (a connection error, then the close of the half-made connection).
    private func attemptFailed(_ context: OpaquePointer, reason: String) {
        guard connecting else { return }
        connecting = false
        scheduleRetry(context, reason: reason)
    }

    /// Waits out the backoff, then connects again; gives up after `maxAttempts` retries.
    func scheduleRetry(_ context: OpaquePointer, reason: String) {
        endHandshakeWatch()
        wsi = nil
        paused = false
        if let resources { lws_sul_cancel(sul(resources.pausedTimer)) }
        if shared.locked({ $0.stopRequested }) {
            requestExit(context)
            return
        }
        if disconnectedAtMillis == nil { disconnectedAtMillis = wallClockMillis() }
        // A connection that delivered data, or stayed up for 10 s, was healthy: start the backoff over.
        if let connectedAt = connectedAtNanos {
            if receivedSinceConnect || monotonicNanos() &- connectedAt >= 10_000_000_000 { attempts = 0 }
            connectedAtNanos = nil
        }
        attempts += 1
        updateStatistics { $0.lastError = reason }
        let policy = options.reconnect
        if !options.reconnects {
            updateStatistics { $0.state = .stopped }
            continuation.yield(.gaveUp(reason))
            requestExit(context)
            return
        }
        if policy.maxAttempts > 0, attempts > policy.maxAttempts {
            report("giving up on \(options.displayURL) after \(policy.maxAttempts) attempts: \(reason)")
            updateStatistics { $0.state = .stopped }
            continuation.yield(.gaveUp(reason))
            requestExit(context)
            return
        }
        let delay = policy.delayMs(attempt: attempts, unit: Double.random(in: 0..<1, using: &random))
        updateStatistics { $0.state = .backingOff }
        report("\(reason); reconnecting with backoff")
        guard let resources else { return }
        lws_sul_schedule(context, 0, sul(resources.reconnectTimer), reconnectTimerFired, lws_usec_t(delay) * 1000)
    }

    /// Ends the run loop; lws_service only returns when woken, even when the flag is set inside a callback.
    func requestExit(_ context: OpaquePointer) {
        exitRequested = true
        lws_cancel_service(context)
    }

    /// Logs `message` once per change, so a feed that stays down says so once, not once per retry.
    func report(_ message: String) {
        guard message != lastReported else { return }
        lastReported = message
        log(message)
    }

    // MARK: - Callbacks

    func handle(_ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ input: UnsafeMutableRawPointer?, _ length: Int)
        -> Int32
    {
        guard let context = wsi.flatMap({ lws_get_context($0) }) else { return 0 }
        switch reason {
        case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
            guard let input else { return 0 }
            let cursor = input.assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
            guard let start = cursor.pointee else { return -1 }
            let end = start + length
            for (name, value) in options.headers {
                let failed = (name + ":").withCString { namePointer in
                    value.withCString { valuePointer in
                        lws_add_http_header_by_name(
                            wsi, UnsafeRawPointer(namePointer).assumingMemoryBound(to: UInt8.self),
                            UnsafeRawPointer(valuePointer).assumingMemoryBound(to: UInt8.self),
                            Int32(value.utf8.count), cursor, end) != 0
                    }
                }
                if failed { return -1 }
            }
        case LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP:
            httpStatus = lws_http_client_http_response(wsi)
        case LWS_CALLBACK_CLIENT_ESTABLISHED:
            connecting = false
            endHandshakeWatch()
            self.wsi = wsi
            connectedAtNanos = monotonicNanos()
            receivedSinceConnect = false
            assembler.reset()
            closeCode = nil
            updateStatistics { statistics in
                statistics.state = .connected
                statistics.connectsTotal += 1
            }
            report("connected to \(options.displayURL)")
            if let start = disconnectedAtMillis {
                continuation.yield(.reconnected(gapStartMillis: start, gapEndMillis: wallClockMillis()))
                disconnectedAtMillis = nil
            }
            outbox = options.subscribeMessages
            if !outbox.isEmpty { lws_callback_on_writable(wsi) }
            // Still behind from the last connection: do not read until the consumer catches up.
            if shared.locked({ $0.gate.paused }), let wsi { pauseReading(wsi) }
        case LWS_CALLBACK_CLIENT_RECEIVE:
            receive(wsi, input, length)
        case LWS_CALLBACK_CLIENT_WRITEABLE:
            return writeable(wsi)
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            if let input, length >= 2 {
                let bytes = input.assumingMemoryBound(to: UInt8.self)
                let code = Int(bytes[0]) << 8 | Int(bytes[1])
                let text = String(decoding: UnsafeBufferPointer(start: bytes + 2, count: length - 2), as: UTF8.self)
                peerCloseReason = "the server closed the connection (\(code)\(text.isEmpty ? "" : " \(text)"))"
            } else {
                peerCloseReason = "the server closed the connection"
            }
        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
            var detail = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "connection error"
            if httpStatus == 0, let wsi { httpStatus = lws_http_client_http_response(wsi) }
            if httpStatus != 0, httpStatus != 101 {
                detail = "the handshake was rejected with HTTP \(httpStatus)"
            } else if detail.contains("SSL") || detail.contains("ssl") {
                detail = "TLS failed: \(detail) (see the lws error above for the reason)"
            } else if detail.contains("Unable to connect") || detail.contains("connect failed") {
                detail = "connection refused or unreachable (\(detail))"
            }
            attemptFailed(context, reason: "\(options.displayURL): \(detail)")
        case LWS_CALLBACK_CLOSED_CLIENT_HTTP:
            // The attempt ended before the upgrade: our handshake timer killed it, or the server hung up.
            let detail =
                handshakeTimedOut
                ? "no handshake within \(options.handshakeTimeoutSecs) s" : "the server hung up during the handshake"
            attemptFailed(context, reason: "\(options.displayURL): \(detail)")
        case LWS_CALLBACK_CLIENT_CLOSED:
            updateStatistics { $0.disconnectsTotal += 1 }
            let reason =
                closeCode == 1009 ? "closed after an oversize message" : (peerCloseReason ?? "the connection was lost")
            scheduleRetry(context, reason: "\(options.displayURL): \(reason)")
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            let (stop, stillPaused) = shared.locked { ($0.stopRequested, $0.gate.paused) }
            if stop {
                if let current = self.wsi { lws_callback_on_writable(current) } else { requestExit(context) }
            } else if !stillPaused, paused, let current = self.wsi {
                resumeReading(current)
            }
        default:
            break
        }
        return lws_callback_http_dummy(wsi, reason, nil, input, length)
    }

    private func receive(_ wsi: OpaquePointer?, _ input: UnsafeMutableRawPointer?, _ length: Int) {
        updateStatistics { $0.receivedBytesTotal += length }
        switch assembler.receive(wsi, input, length) {
        case .incomplete:
            break
        case .message(let message):
            // Only a whole message makes the connection healthy; bytes of a frame that never ends do not.
            receivedSinceConnect = true
            pending.append(message)
        case .oversize(let size):
            continuation.yield(.oversize(bytes: size))
            report(
                "\(options.displayURL): a message exceeded max_message_bytes (\(options.maxMessageBytes)); closing with 1009"
            )
            closeCode = 1009
            lws_callback_on_writable(wsi)
        }
    }

    private func writeable(_ wsi: OpaquePointer?) -> Int32 {
        if shared.locked({ $0.stopRequested }) {
            closeWith(wsi, LWS_CLOSE_STATUS_NORMAL, "bye")
            return -1
        }
        if closeCode == 1009 {
            closeWith(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, "message too large")
            return -1
        }
        guard !outbox.isEmpty else { return 0 }
        // lws_write masks a client's payload in place: writeMessage always writes a copy.
        guard writeMessage(wsi, Array(outbox.removeFirst().utf8)) else { return -1 }
        if !outbox.isEmpty { lws_callback_on_writable(wsi) }
        return 0
    }

}

// MARK: - C entry points (capture nothing; the owner comes from the context's user pointer)

private func clientCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
    _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    guard let wsi, let context = lws_get_context(wsi), let owner = lws_context_user(context) else {
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
    return Unmanaged<WebSocketClient>.fromOpaque(owner).takeUnretainedValue().handle(wsi, reason, input, length)
}

private func reconnectTimerFired(_ sul: UnsafeMutablePointer<lws_sorted_usec_list_t>?) {
    guard let sul, let owner = sluice_lws_timer_owner(sul) else { return }
    let client = Unmanaged<WebSocketClient>.fromOpaque(owner).takeUnretainedValue()
    guard let context = client.shared.locked({ $0.context?.pointer }) else { return }
    client.connect(context)
}

private func pausedTimerFired(_ sul: UnsafeMutablePointer<lws_sorted_usec_list_t>?) {
    guard let sul, let owner = sluice_lws_timer_owner(sul) else { return }
    Unmanaged<WebSocketClient>.fromOpaque(owner).takeUnretainedValue().keepValidWhilePaused()
}

private func handshakeTimerFired(_ sul: UnsafeMutablePointer<lws_sorted_usec_list_t>?) {
    guard let sul, let owner = sluice_lws_timer_owner(sul) else { return }
    Unmanaged<WebSocketClient>.fromOpaque(owner).takeUnretainedValue().handshakeTimeout()
}

/// The lws timer list entry at the start of one of our timers.
private func sul(_ timer: UnsafeMutablePointer<sluice_lws_timer>) -> UnsafeMutablePointer<lws_sorted_usec_list_t> {
    UnsafeMutableRawPointer(timer).assumingMemoryBound(to: lws_sorted_usec_list_t.self)
}

func monotonicNanos() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
}

func wallClockMillis() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
}

/// Sets the close code and reason sent when the callback then returns -1.
func closeWith(_ wsi: OpaquePointer?, _ status: lws_close_status, _ text: String) {
    var bytes = Array(text.utf8)
    lws_close_reason(wsi, status, &bytes, bytes.count)
}
