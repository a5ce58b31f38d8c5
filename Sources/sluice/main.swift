// The `sluice` executable: the only place that touches the process itself (signals, exit).
import SluiceCLI
import SluiceSync

#if canImport(Glibc)
    import Glibc
#endif

func processEnvironment() -> [String: String] {
    var result: [String: String] = [:]
    var entry = environ
    while let pointer = entry.pointee {
        let text = String(cString: pointer)
        if let equals = text.firstIndex(of: "=") {
            result[String(text[..<equals])] = String(text[text.index(after: equals)...])
        }
        entry += 1
    }
    return result
}

// A closed stdout must end the run through EPIPE, not kill the process before the final report.
signal(SIGPIPE, SIG_IGN)

/// SIGINT, SIGTERM and SIGHUP become bytes on a pipe, written by a handler set before anything else runs (a write to
/// a pipe is safe in a handler), and are acted on by one thread that reads the pipe. So a signal that arrives before
/// its action is set cannot be lost on the way, as one sent to a dispatch signal source could be: such a source is
/// registered asynchronously, and a SIGHUP sent in that window (after a run's first output, on a busy machine) was
/// ignored.
struct SignalActions: Sendable {
    /// The first SIGINT or SIGTERM calls these (stop and drain); a second one, or the first before any is set,
    /// exits at once with 130.
    var stop: [@Sendable () -> Void] = []
    var stopRequested = false
    /// Every SIGHUP calls this (`run` reloads its file); without one, SIGHUP is ignored.
    var reload: (@Sendable () -> Void)?
}

func failToStart(_ why: String) -> Never {
    let message = "sluice: error: \(why)\n"
    _ = message.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(ExitCode.runtimeFailure.rawValue)
}

let (signalReadEnd, signalWriteEnd) = { () -> (Int32, Int32) in
    var ends: [Int32] = [0, 0]
    guard pipe(&ends) == 0 else { failToStart("cannot make the signal pipe: \(String(cString: strerror(errno)))") }
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    // The handler must never block: with thousands of signals unread, one more is dropped.
    _ = fcntl(ends[1], F_SETFL, O_NONBLOCK)
    return (ends[0], ends[1])
}()
let signalActions = Locked(SignalActions())
for number in [SIGINT, SIGTERM, SIGHUP] {
    // glibc's signal() keeps the handler and restarts interrupted calls (BSD semantics).
    _ = signal(number) { number in
        let saved = errno
        var byte = UInt8(truncatingIfNeeded: number)
        _ = write(signalWriteEnd, &byte, 1)
        errno = saved
    }
}
do {
    try ServiceThread.start {
        var byte: UInt8 = 0
        while true {
            let count = read(signalReadEnd, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1 else { return }
            if Int32(byte) == SIGHUP {
                signalActions.locked { $0.reload }?()
                continue
            }
            let stop = signalActions.locked { actions -> [@Sendable () -> Void]? in
                defer { actions.stopRequested = true }
                return actions.stopRequested || actions.stop.isEmpty ? nil : actions.stop
            }
            guard let stop else { exit(ExitCode.interrupted.rawValue) }
            for action in stop { action() }
        }
    }
} catch {
    failToStart("\(error)")
}

let code = await SluiceCommand.main(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: processEnvironment()
) { stop in
    signalActions.locked { $0.stop.append(stop) }
} onReloadRequest: { reload in
    signalActions.locked { $0.reload = reload }
}
exit(code.rawValue)
