internal import SluiceCore
internal import SluiceRegex
internal import Synchronization

/// Joins lines into multi-line events (see ``MultilineConfig``): a line matching the start pattern emits the event
/// being built and begins the next; any other line is appended to it after a newline. A line that would take the
/// event past `max_lines` or `max_bytes` emits it first and begins the next (a cut, counted): nothing is dropped.
/// A continuation line with no event open begins one.
struct MultilineAssembler {
    let config: MultilineConfig
    private let matcher: RegexMatcher
    private var pending: [UInt8] = []
    private var lines = 0
    /// When the last line was added, in ``MonotonicClock`` nanoseconds.
    private var lastLineNanos: UInt64 = 0
    /// Events cut at a limit, and lines joined to an event begun by an earlier one, since the start.
    private(set) var cuts = 0
    private(set) var joinedLines = 0

    init(_ config: MultilineConfig) {
        self.config = config
        matcher = config.startPattern.makeMatcher()
    }

    /// True while an event is being built.
    var isHolding: Bool { lines > 0 }

    /// The input bytes of the event being built: its lines were joined with one newline each, as they ended.
    var heldInputBytes: Int { isHolding ? pending.count + 1 : 0 }

    /// When the event being built is due for emission (its timeout), in ``MonotonicClock`` nanoseconds.
    var deadlineNanos: UInt64? {
        isHolding ? lastLineNanos + UInt64(config.timeoutMillis) * 1_000_000 : nil
    }

    /// Takes one line (valid UTF-8 or not: the pattern checks), calling `emit` with each event it completes.
    mutating func feed(_ line: UnsafeBufferPointer<UInt8>, now: UInt64, _ emit: (UnsafeBufferPointer<UInt8>) -> Void) {
        // A line the pattern cannot be run on (invalid UTF-8, too much backtracking) continues the event.
        let starts = (try? matcher.matches(unchecked: UnsafeRawBufferPointer(line))) ?? false
        if starts || lines == 0 {
            flush(emit)
        } else if lines + 1 > config.maxLines || pending.count + 1 + line.count > config.maxBytes {
            cuts += 1
            flush(emit)
        } else {
            pending.append(UInt8(ascii: "\n"))
            joinedLines += 1
        }
        pending.append(contentsOf: line)
        lines += 1
        lastLineNanos = now
    }

    /// Emits the event being built, if any (its timeout passed, or the input ended).
    mutating func flush(_ emit: (UnsafeBufferPointer<UInt8>) -> Void) {
        guard lines > 0 else { return }
        pending.withUnsafeBufferPointer(emit)
        pending.removeAll(keepingCapacity: pending.capacity <= 1 << 20)
        lines = 0
    }
}

/// A source's multi-line figures for its metrics (`multiline: {events_cut_total, lines_joined_total}`), updated
/// by the source's task and read by the metrics reporter.
final class MultilineCounters: Sendable {
    private let cuts = Atomic<Int>(0)
    private let joined = Atomic<Int>(0)

    func update(_ assembler: MultilineAssembler?) {
        guard let assembler else { return }
        update(cuts: assembler.cuts, joined: assembler.joinedLines)
    }

    func update(cuts: Int, joined: Int) {
        self.cuts.store(cuts, ordering: .relaxed)
        self.joined.store(joined, ordering: .relaxed)
    }

    var details: JSONObject {
        [
            "multiline": [
                "events_cut_total": .int(Int64(cuts.load(ordering: .relaxed))),
                "lines_joined_total": .int(Int64(joined.load(ordering: .relaxed))),
            ]
        ]
    }
}
