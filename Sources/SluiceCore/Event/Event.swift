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
