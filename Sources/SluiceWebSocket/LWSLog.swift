internal import CLibWebSockets
internal import SluiceSync
internal import Synchronization

/// Routes libwebsockets' own log lines (errors and warnings only) into Sluice's logging: TLS failures are only
/// explained there. A line equal to the one before is not repeated, so a feed failing the same way on every retry
/// is reported once. lws logging is process-wide, so the last installed sink wins.
enum LWSLog {
    private static let state = Mutex<(sink: (@Sendable (String) -> Void)?, last: String?)>((nil, nil))

    static func install(_ log: @escaping @Sendable (String) -> Void) {
        let first = state.locked { state -> Bool in
            defer { state.sink = log }
            return state.sink == nil
        }
        if first { lws_set_log_level(Int32(LLL_ERR | LLL_WARN), emit) }
    }

    fileprivate static func forward(_ line: String) {
        let sink = state.locked { state -> (@Sendable (String) -> Void)? in
            guard line != state.last else { return nil }
            state.last = line
            return state.sink
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
