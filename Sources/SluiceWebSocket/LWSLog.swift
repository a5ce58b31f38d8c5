internal import CLibWebSockets
internal import Synchronization

/// Routes libwebsockets' own log lines (errors and warnings only) into Sluice's logging: TLS failures are only
/// explained there. lws logging is process-wide, so the last installed sink wins.
enum LWSLog {
    private static let sink = Mutex<(@Sendable (String) -> Void)?>(nil)

    static func install(_ log: @escaping @Sendable (String) -> Void) {
        let first = sink.withLock { current -> Bool in
            defer { current = log }
            return current == nil
        }
        if first { lws_set_log_level(Int32(LLL_ERR | LLL_WARN), emit) }
    }

    fileprivate static func forward(_ line: String) {
        sink.withLock { $0 }?(line)
    }
}

private func emit(_ level: Int32, _ line: UnsafePointer<CChar>?) {
    guard let line else { return }
    var text = String(cString: line)
    while text.last == "\n" { text.removeLast() }
    LWSLog.forward("libwebsockets: \(text)")
}
