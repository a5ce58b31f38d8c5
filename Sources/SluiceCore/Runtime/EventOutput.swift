/// A component's outgoing edge: every batch goes to the input buffer of each consumer, in turn.
///
/// With a `block` consumer, ``send(_:)`` waits for room, which is how backpressure travels upstream.
public final class EventOutput: Sendable {
    private let targets: [EventBuffer]
    private let metrics: ComponentMetrics?
    private let tap: TapPoint
    private let name: String?

    /// An edge into `targets` that counts what it sends on `metrics`.
    public init(targets: [EventBuffer], metrics: ComponentMetrics) {
        self.targets = targets
        self.metrics = metrics
        self.tap = metrics.tap
        self.name = nil
    }

    /// The named output `name` of the component `metrics` counts: it counts nothing itself, as its transform
    /// counts each event once, however many outputs it went to.
    public init(targets: [EventBuffer], namedOutput name: String, of metrics: ComponentMetrics) {
        self.targets = targets
        self.metrics = nil
        self.tap = metrics.tap
        self.name = name
    }

    /// Sends `batch` to every consumer and counts it once as sent.
    public func send(_ batch: [Event]) async {
        guard !batch.isEmpty else { return }
        metrics?.recordSent(batch.count)
        tap.offer(batch, output: name)
        for target in targets { await target.send(batch) }
    }

    /// Tells every consumer that this producer is done.
    func finish() {
        for target in targets { target.finishProducer() }
    }
}

/// What a running source is given.
public struct SourceContext: Sendable {
    /// The source's id.
    public let id: String
    /// Where its batches go.
    public let output: EventOutput
    /// Its counters: lines read as received, discards by cause (sends are counted by ``output``).
    public let metrics: ComponentMetrics
    /// Where its warnings go.
    public let log: Logger
    /// Fires when the pipeline is asked to stop; the source then returns soon.
    public let stop: StopSignal
    /// Every event ingested before this time (``MonotonicClock`` nanoseconds) is finished: written by the sinks
    /// it reached, or discarded; a source that keeps positions (the `file` source) commits only those.
    public let finishedBefore: @Sendable () -> UInt64
}

/// What a running sink is given.
public struct SinkContext: Sendable {
    /// The sink's id.
    public let id: String
    /// Its counters: events written as sent, discards by cause.
    public let metrics: ComponentMetrics
    /// Where its warnings go.
    public let log: Logger
    /// What it has taken from its input but not yet written, when it keeps events across batches.
    public let held: HeldMark
}
