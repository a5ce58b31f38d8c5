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
}

/// Discard counts by cause, accumulated per batch and then added to a component's metrics in one step.
public struct DiscardCounts: Sendable, Equatable {
    private var counts = [Int](repeating: 0, count: DiscardCause.allCases.count)

    public init() {}

    /// The count for `cause`.
    public subscript(cause: DiscardCause) -> Int {
        get { counts[DiscardCause.allCases.firstIndex(of: cause)!] }
        set { counts[DiscardCause.allCases.firstIndex(of: cause)!] = newValue }
    }

    /// All discards together.
    public var total: Int { counts.reduce(0, +) }

    /// Adds every count of `other`.
    public mutating func add(_ other: DiscardCounts) {
        for index in counts.indices { counts[index] += other.counts[index] }
    }
}
