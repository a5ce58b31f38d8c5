import SluiceCLI
import SluiceSync

#if canImport(Glibc)
    import Glibc
#endif

/// SIGINT, SIGTERM and SIGHUP become bytes on a pipe, written by a handler set before anything else runs (a write to
/// a pipe is safe in a handler), and are acted on by one thread that reads the pipe. So a signal that arrives before
/// its action is set cannot be lost on the way, as one sent to a dispatch signal source could be: such a source is
/// registered asynchronously, and a SIGHUP sent in that window (after a run's first output, on a busy machine) was
/// ignored.
///
/// Not in `main.swift`, whose top-level code runs on the main actor: a handler made there would check that it runs
/// on the main thread, and a signal may arrive on any thread that does not block it.
enum SignalRelay {
    /// What the signals do.
    struct Actions: Sendable {
        /// The first SIGINT or SIGTERM calls these (stop and drain); a second one, or the first before any is set,
        /// exits at once with 130.
        var stop: [@Sendable () -> Void] = []
        var stopRequested = false
        /// Every SIGHUP calls this (`run` reloads its file); without one, SIGHUP is ignored.
        var reload: (@Sendable () -> Void)?
    }

    static let actions = Locked(Actions())

    /// The pipe's write end, for the handler. Written once, by `install()` before it sets the handler, and only read
    /// afterwards.
    nonisolated(unsafe) private static var writeEnd: Int32 = -1

    /// Makes the pipe, sets the handlers and starts the thread that acts on what they relay.
    static func install() throws(SignalRelayError) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            throw SignalRelayError(message: "cannot make the signal pipe: \(String(cString: strerror(errno)))")
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        // The handler must never block: with thousands of signals unread, one more is dropped.
        _ = fcntl(ends[1], F_SETFL, O_NONBLOCK)
        writeEnd = ends[1]
        let readEnd = ends[0]
        // A parent may have started us with these blocked (a thread of a test runner, say); the relay thread inherits
        // this thread's mask, and either may take them.
        var handled = sigset_t()
        sigemptyset(&handled)
        for number in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&handled, number) }
        pthread_sigmask(SIG_UNBLOCK, &handled, nil)
        do {
            try ServiceThread.start { relay(from: readEnd) }
        } catch {
            throw SignalRelayError(message: error.message)
        }
        for number in [SIGINT, SIGTERM, SIGHUP] {
            // glibc's signal() keeps the handler and restarts interrupted calls (BSD semantics).
            _ = signal(number) { number in
                let saved = errno
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(SignalRelay.writeEnd, &byte, 1)
                errno = saved
            }
        }
    }

    /// The relay thread: acts on each signal the handler wrote.
    private static func relay(from readEnd: Int32) {
        var byte: UInt8 = 0
        while true {
            let count = read(readEnd, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1 else { return }
            if Int32(byte) == SIGHUP {
                actions.locked { $0.reload }?()
                continue
            }
            let stop = actions.locked { actions -> [@Sendable () -> Void]? in
                defer { actions.stopRequested = true }
                return actions.stopRequested || actions.stop.isEmpty ? nil : actions.stop
            }
            // At once: no exit handlers (see `endProcess`), and no flush, which would wait for a thread that holds
            // stdout's lock while it writes to a full pipe.
            guard let stop else { _exit(ExitCode.interrupted.rawValue) }
            for action in stop { action() }
        }
    }
}

/// The signal pipe or its thread could not be made.
struct SignalRelayError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
