internal import Synchronization

/// The earliest ingest time of the events one part of a running pipeline holds outside any buffer: a stateful
/// transform's open windows, a sink's bytes not yet written. `UInt64.max` when it holds none.
///
/// The runner reads every mark and buffer to tell which events are finished (see
/// ``PipelineRunner/heldSinceNanos()``); a holder sets its mark before it asks its buffer for the next batch,
/// which is when the buffer stops counting the last one as held.
public final class HeldMark: Sendable {
    private let nanos = Atomic<UInt64>(.max)

    /// A mark holding nothing.
    public init() {}

    /// The earliest ingest time held; `UInt64.max` for none.
    public var value: UInt64 { nanos.load(ordering: .sequentiallyConsistent) }

    /// Records what is held now.
    public func set(_ value: UInt64) { nanos.store(value, ordering: .sequentiallyConsistent) }

    /// Records that nothing is held.
    public func clear() { set(.max) }
}
