/// Why an event was discarded; every discard is counted under exactly one cause.
public enum DiscardCause: String, Sendable, CaseIterable {
    /// An input buffer was full and its policy drops events.
    case bufferFull = "buffer_full"
    /// Input that is not valid in the configured decoding (for example a line that is not JSON).
    case parseError = "parse_error"
    /// Input larger than the configured limit.
    case oversize
    /// A filter's condition was not true.
    case filtered
    /// Processing failed (an expression error, or a sink that could no longer write).
    case error
    /// An event for a window that had already closed (event time beyond the allowed lateness).
    case late
    /// An event whose key `dedupe` had seen recently.
    case duplicate
    /// An event over a `throttle` budget.
    case throttled
    /// An event `sample` did not keep.
    case sampled
    /// An event no `route` matched, when nothing reads the route's `_unmatched` output.
    case unmatched
    /// A buffered event replaced by a newer one with the same key (`latest_per_key` buffers).
    case superseded
}

/// Discard counts by cause, accumulated per batch and then added to a component's metrics in one step.
public struct DiscardCounts: Sendable, Equatable {
    private var counts = [Int](repeating: 0, count: DiscardCause.allCases.count)

    /// No discards.
    public init() {}

    /// The count for `cause`.
    public subscript(cause: DiscardCause) -> Int {
        get { counts[Self.index(cause)] }
        set { counts[Self.index(cause)] = newValue }
    }

    /// All discards together.
    public var total: Int { counts.reduce(0, +) }

    /// Adds every count of `other`.
    public mutating func add(_ other: DiscardCounts) {
        for index in counts.indices { counts[index] += other.counts[index] }
    }

    /// A cause's place in `counts`: its declaration order, without searching `allCases` on every count.
    @inline(__always)
    private static func index(_ cause: DiscardCause) -> Int {
        switch cause {
        case .bufferFull: 0
        case .parseError: 1
        case .oversize: 2
        case .filtered: 3
        case .error: 4
        case .late: 5
        case .duplicate: 6
        case .throttled: 7
        case .sampled: 8
        case .unmatched: 9
        case .superseded: 10
        }
    }
}
