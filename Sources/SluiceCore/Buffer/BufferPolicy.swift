/// What a component's input buffer does when it holds `max_events` events and more arrive.
///
/// The YAML words name what is dropped: `drop_newest` discards the arriving events, `drop_oldest` discards the
/// oldest buffered events to make room, `block` makes the producer wait, and `unbounded` never fills.
public enum BufferPolicy: Sendable, Equatable, CustomStringConvertible {
    /// Producers wait until there is room; nothing is lost.
    case block(maxEvents: Int)
    /// Arriving events that do not fit are discarded.
    case dropNewest(maxEvents: Int)
    /// The oldest buffered events are discarded to make room for arriving ones.
    case dropOldest(maxEvents: Int)
    /// The buffer grows without limit.
    case unbounded

    /// The default for every input edge: 1,000 events, and producers wait.
    public static let `default` = BufferPolicy.block(maxEvents: 1000)

    /// The largest `max_events` accepted.
    public static let maxEventsLimit = 100_000_000

    /// The word for `when_full`, or `unbounded`.
    public var whenFull: String {
        switch self {
        case .block: "block"
        case .dropNewest: "drop_newest"
        case .dropOldest: "drop_oldest"
        case .unbounded: "unbounded"
        }
    }

    /// The capacity in events, or `nil` when unbounded.
    public var maxEvents: Int? {
        switch self {
        case .block(let max), .dropNewest(let max), .dropOldest(let max): max
        case .unbounded: nil
        }
    }

    public var description: String {
        maxEvents.map { "\(whenFull) \($0)" } ?? whenFull
    }
}

/// The words `when_full` accepts.
enum WhenFull: String, ConfigChoice {
    case block
    case drop_newest
    case drop_oldest

    func policy(maxEvents: Int) -> BufferPolicy {
        switch self {
        case .block: .block(maxEvents: maxEvents)
        case .drop_newest: .dropNewest(maxEvents: maxEvents)
        case .drop_oldest: .dropOldest(maxEvents: maxEvents)
        }
    }
}
