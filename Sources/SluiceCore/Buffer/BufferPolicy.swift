/// What a component's input buffer does when it holds `max_events` events and more arrive.
///
/// The YAML words name what is dropped: `drop_newest` discards the arriving events, `drop_oldest` discards the
/// oldest buffered events to make room, `block` makes the producer wait, `unbounded` never fills, and
/// `latest_per_key` keeps only the newest event of each key.
public enum BufferPolicy: Sendable, Equatable, CustomStringConvertible {
    /// Producers wait until there is room; nothing is lost.
    case block(maxEvents: Int)
    /// Arriving events that do not fit are discarded.
    case dropNewest(maxEvents: Int)
    /// The oldest buffered events are discarded to make room for arriving ones.
    case dropOldest(maxEvents: Int)
    /// The buffer grows without limit.
    case unbounded
    /// One event per value of `key`: a newer event replaces the buffered one of its key in place (`superseded`),
    /// and with `maxEvents` keys buffered the oldest is dropped for a new key (`buffer_full`).
    case latestPerKey(maxEvents: Int, key: Expression)

    /// The default for every input edge: ``defaultMaxEvents``, and producers wait.
    public static let `default` = BufferPolicy.block(maxEvents: defaultMaxEvents)

    /// The capacity of a buffer that does not give `max_events`: eight batches. A source sends a chunk's batches
    /// together (stdin decodes 512 KiB at once: 2,800 events of 183 bytes, 5,200 of 100), so its consumer's buffer
    /// must take them all and the batch being worked on, or the source waits for each batch to be taken, idle,
    /// and then decodes beside its consumer: with room for one batch (1,000 events) stdin -> aggregate left each
    /// core idle 27 % of the time (`perf sched`), and took 1.3 times as long.
    public static let defaultMaxEvents = 8 * EventBuffer.batchEvents

    /// The largest `max_events` accepted.
    public static let maxEventsLimit = 100_000_000

    /// The word for `when_full`, or `unbounded`.
    public var whenFull: String {
        switch self {
        case .block: "block"
        case .dropNewest: "drop_newest"
        case .dropOldest: "drop_oldest"
        case .unbounded: "unbounded"
        case .latestPerKey: "latest_per_key"
        }
    }

    /// The capacity in events, or `nil` when unbounded.
    public var maxEvents: Int? {
        switch self {
        case .block(let max), .dropNewest(let max), .dropOldest(let max), .latestPerKey(let max, _): max
        case .unbounded: nil
        }
    }

    /// The policy as a pipeline file writes it, for messages.
    public var description: String {
        switch self {
        case .latestPerKey(let max, let key): "latest_per_key \(max) by \(key.source)"
        default: maxEvents.map { "\(whenFull) \($0)" } ?? whenFull
        }
    }

    /// Policies are equal when their kind and limit are (a `latest_per_key` key compares by its source text).
    public static func == (left: BufferPolicy, right: BufferPolicy) -> Bool {
        switch (left, right) {
        case (.block(let a), .block(let b)), (.dropNewest(let a), .dropNewest(let b)),
            (.dropOldest(let a), .dropOldest(let b)):
            a == b
        case (.unbounded, .unbounded): true
        case (.latestPerKey(let a, let keyA), .latestPerKey(let b, let keyB)): a == b && keyA.source == keyB.source
        default: false
        }
    }
}

/// The words `when_full` accepts.
enum WhenFull: String, ConfigChoice {
    case block
    case drop_newest
    case drop_oldest
    case latest_per_key
}
