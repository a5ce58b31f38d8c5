/// One pass of a transform over a batch (or over no batch, when time or the end of input moves it): the time it
/// runs at, and what it counted. The runner adds the counts to the transform's metrics after the pass.
///
/// A transform keeps the ledger `received + created = sent + discarded + folded`: every input event is sent on,
/// discarded with a cause, or folded into state; every event it makes itself is created.
public struct TransformPass: Sendable {
    /// Wall-clock time of the pass in milliseconds since the Unix epoch: the processing time.
    public let nowMillis: Int64
    /// Events removed from the batch, by cause.
    public var discards = DiscardCounts()
    /// Input events absorbed into state (events an aggregate consumed).
    public var folded = 0
    /// Events the transform made itself (the aggregates it emitted).
    public var created = 0
    /// For a transform with named outputs: the events for each output, in the order of its config's ``TransformConfig/outputs``,
    /// and how many distinct events went to at least one (which is what it sent).
    public var routed: [[Event]] = []
    /// How many distinct events went to at least one named output.
    public var routedEvents = 0

    /// A pass at processing time `nowMillis` (milliseconds since the Unix epoch), with nothing counted yet.
    public init(nowMillis: Int64) {
        self.nowMillis = nowMillis
    }
}

/// What a stateful transform holds, for metrics.
public struct TransformState: Sendable, Equatable {
    /// What is counted: `open_windows` or `state_keys`.
    public var name: String
    /// How many are held now.
    public var size: Int
    /// How many were given up to stay within the limit (windows emitted early, keys forgotten), so far.
    public var evictedTotal: Int

    /// State named `name` (`open_windows`, `state_keys`) of `size`, with `evictedTotal` given up so far.
    public init(name: String, size: Int, evictedTotal: Int) {
        self.name = name
        self.size = size
        self.evictedTotal = evictedTotal
    }
}
