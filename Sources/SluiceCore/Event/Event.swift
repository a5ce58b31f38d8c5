/// One event flowing through a pipeline: a JSON value and the moment it entered Sluice.
public struct Event: Sendable, Hashable {
    /// The event's data.
    public var value: JSONValue
    /// When a source created the event, in ``MonotonicClock`` nanoseconds; sinks measure latency from it.
    public var ingestNanos: UInt64

    public init(_ value: JSONValue, ingestNanos: UInt64 = 0) {
        self.value = value
        self.ingestNanos = ingestNanos
    }
}

extension Array where Element == Event {
    /// Keeps, in order, the events for which `body` returns true, letting `body` change each one on the way: the
    /// single in-place pass that every stage uses, so a stage allocates no second array per batch.
    public mutating func retainEvents(_ body: (inout Event) -> Bool) {
        var kept = 0
        for index in indices where body(&self[index]) {
            if kept != index { swapAt(kept, index) }
            kept += 1
        }
        removeLast(count - kept)
    }
}
