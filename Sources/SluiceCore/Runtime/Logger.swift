internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// Writes Sluice's own messages (warnings and errors, never events) as lines to standard error.
///
/// The executable creates it; components receive it through their context and never print directly.
public struct Logger: Sendable {
    private let emit: @Sendable (String) -> Void

    /// A logger that hands each finished line to `emit`; tests collect lines this way.
    public init(emit: @escaping @Sendable (String) -> Void) {
        self.emit = emit
    }

    /// A logger that writes to standard error through ``OutputWriter/standardError``: a line is queued and written
    /// on the writer's own thread, so logging never blocks a thread of Swift's cooperative pool, even when nobody
    /// reads standard error (see ``OutputWriter/writeLater(_:)``).
    public static let standardError = Logger { line in
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        OutputWriter.standardError.writeLater(bytes)
    }

    /// Reports something that needs attention but does not stop the pipeline.
    public func warning(_ message: String) { emit("sluice: warning: \(message)") }

    /// Reports a failure.
    public func error(_ message: String) { emit("sluice: error: \(message)") }

    /// Reports a fact a user asked for or should know (the seed of a run, say).
    public func info(_ message: String) { emit("sluice: \(message)") }

    /// Writes `text` as it is, for output that has its own format (config diagnostics).
    public func write(_ text: String) { emit(text) }
}

/// Lets the first few messages of a kind through, then at most one summary a second, so that a flood of bad
/// input cannot flood standard error. Owned by one task.
public struct RateLimitedReporter: Sendable {
    private let burst: Int
    private var reported = 0
    private var suppressed = 0
    private var lastSummaryNanos: UInt64 = 0

    /// Lets `burst` messages through before summarising.
    public init(burst: Int = 10) {
        self.burst = burst
    }

    /// Reports `message()` through `log`, or counts it as suppressed; `summary(n)` words the suppressed count.
    public mutating func report(
        to log: Logger, now: UInt64 = MonotonicClock.nanos(), _ message: () -> String,
        summary: (Int) -> String
    ) {
        if reported < burst {
            reported += 1
            log.warning(message())
            if reported == burst { lastSummaryNanos = now }
            return
        }
        suppressed += 1
        flush(to: log, now: now, summary: summary)
    }

    /// Writes the summary of suppressed messages if a second has passed (or `force` is set).
    public mutating func flush(
        to log: Logger, now: UInt64 = MonotonicClock.nanos(), force: Bool = false,
        summary: (Int) -> String
    ) {
        guard suppressed > 0, force || now &- lastSummaryNanos >= 1_000_000_000 else { return }
        log.warning(summary(suppressed))
        suppressed = 0
        lastSummaryNanos = now
    }
}

/// A one-way switch that asks sources to stop reading; the runner drains what they already sent.
public final class StopSignal: Sendable {
    private let state = Mutex<(stopped: Bool, handlers: [@Sendable () -> Void])>((false, []))

    /// A signal that has not fired.
    public init() {}

    /// True once ``stop()`` was called.
    public var isStopped: Bool { state.locked { $0.stopped } }

    /// Flips the switch and runs every handler once.
    public func stop() {
        let handlers = state.locked { state -> [@Sendable () -> Void] in
            guard !state.stopped else { return [] }
            state.stopped = true
            defer { state.handlers.removeAll() }
            return state.handlers
        }
        for handler in handlers { handler() }
    }

    /// Runs `handler` when the switch flips, or now if it already has.
    public func onStop(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.locked { state -> Bool in
            if state.stopped { return true }
            state.handlers.append(handler)
            return false
        }
        if runNow { handler() }
    }
}
