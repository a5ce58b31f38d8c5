internal import SluiceSync
internal import Synchronization

/// The counters of one component: events received, sent and discarded by cause, folded into state and created, its
/// input buffer and state, and for sinks the end-to-end latency. Components update it once per batch.
///
/// For every component `received + created = sent + discarded + folded`, exactly at the end of a run, and up to
/// what is buffered while it runs.
public final class ComponentMetrics: Sendable {
    /// The component's id.
    public let id: String
    /// Its kind.
    public let kind: ComponentKind
    /// Its type name (a reload may give the component another type of its kind).
    public var typeName: String { type.locked { $0 } }
    private let type: Mutex<String>
    /// Where the events leaving the component can be watched.
    public let tap = TapPoint()
    private let counters = Mutex(Counters())
    private let inputBuffer = Mutex<EventBuffer?>(nil)
    private let detailsProvider = Mutex<(@Sendable () -> JSONObject)?>(nil)

    private struct Counters {
        var received = 0
        var sent = 0
        var discarded = DiscardCounts()
        var folded = 0
        var created = 0
        var state: TransformState?
        var latency = LatencyHistogram()
        /// Latencies since the last report, for the live view.
        var recentLatency = LatencyHistogram()
    }

    /// Zeroed counters for component `id` of `kind` and type `typeName`.
    public init(id: String, kind: ComponentKind, typeName: String) {
        self.id = id
        self.kind = kind
        self.type = Mutex(typeName)
    }

    /// The component was replaced by one of type `typeName`: what the old one reported of itself (a source's or
    /// sink's details, a transform's state) goes; the counters go on. (A transform's details are the runner's.)
    func retype(_ typeName: String) {
        let changed = type.locked { old in
            defer { old = typeName }
            return old != typeName
        }
        guard changed else { return }
        if kind != .transform { detailsProvider.locked { $0 = nil } }
        counters.locked { $0.state = nil }
    }

    /// Adds component-specific fields to every report (a WebSocket source's `connection` object, say).
    public func provideDetails(_ provider: @escaping @Sendable () -> JSONObject) {
        detailsProvider.locked { $0 = provider }
    }

    func attach(_ buffer: EventBuffer) {
        inputBuffer.locked { $0 = buffer }
    }

    /// Counts events that reached the component: lines or messages read by a source, events arriving at the
    /// input buffer of any other component.
    public func recordReceived(_ count: Int) {
        counters.locked { $0.received += count }
    }

    /// Counts events passed on (sources and transforms) or written out (sinks).
    public func recordSent(_ count: Int) {
        counters.locked { $0.sent += count }
    }

    /// Counts discarded events under `cause`.
    public func recordDiscarded(_ count: Int, cause: DiscardCause) {
        counters.locked { $0.discarded[cause] += count }
    }

    /// Counts several causes at once.
    public func recordDiscarded(_ counts: DiscardCounts) {
        guard counts.total > 0 else { return }
        counters.locked { $0.discarded.add(counts) }
    }

    /// Adds what one pass of a transform counted besides its sends: discards, folded and created events, and the
    /// state it holds now.
    public func record(_ pass: TransformPass, state: TransformState?) {
        guard pass.discards.total > 0 || pass.folded > 0 || pass.created > 0 || state != nil else { return }
        counters.locked { counters in
            counters.discarded.add(pass.discards)
            counters.folded += pass.folded
            counters.created += pass.created
            if let state { counters.state = state }
        }
    }

    /// Counts events written now, given their ingest times: sent, each with its latency since ingest.
    public func recordWritten(ingestTimes: [UInt64], at now: UInt64) {
        recordWritten(ingestTimes.count, now: now) { ingestTimes.forEach($0) }
    }

    /// Counts `events` as written now: sent, each with its latency since ingest.
    public func recordWritten(_ events: [Event], at now: UInt64) {
        recordWritten(events.count, now: now) { record in events.forEach { record($0.ingestNanos) } }
    }

    /// Concrete callers rather than one generic over collections: a generic called from another module runs
    /// unspecialized, copying every event through witness tables.
    @inline(__always)
    private func recordWritten(_ count: Int, now: UInt64, _ forEachIngest: ((UInt64) -> Void) -> Void) {
        var recent = LatencyHistogram()
        forEachIngest { recent.record(nanos: now &- $0) }
        counters.locked { counters in
            counters.sent += count
            counters.recentLatency.add(recent)
        }
    }

    /// The counters now; each snapshot starts a new interval for the live latency figures.
    public func snapshot() -> ComponentSnapshot {
        let buffer = inputBuffer.locked { $0 }?.snapshot()
        let details = detailsProvider.locked { $0 }?() ?? JSONObject()
        return counters.locked { counters in
            let recent = counters.recentLatency
            counters.latency.add(recent)
            counters.recentLatency = LatencyHistogram()
            return ComponentSnapshot(
                id: id, kind: kind, typeName: typeName, received: counters.received, sent: counters.sent,
                discarded: counters.discarded, folded: counters.folded, created: counters.created,
                state: counters.state, buffer: buffer, recentLatency: recent, totalLatency: counters.latency,
                details: details)
        }
    }
}

/// One component's counters at one moment.
public struct ComponentSnapshot: Sendable, Equatable {
    /// The component's id.
    public var id: String
    /// Source, transform or sink.
    public var kind: ComponentKind
    /// Its `type`.
    public var typeName: String
    /// Events received so far.
    public var received: Int
    /// Events sent or written so far.
    public var sent: Int
    /// Events discarded so far, by cause.
    public var discarded: DiscardCounts
    /// Input events absorbed into state so far (by aggregates).
    public var folded = 0
    /// Events the component made itself so far (aggregates emitted).
    public var created = 0
    /// What a stateful transform holds now.
    public var state: TransformState?
    /// The input buffer, or `nil` for sources.
    public var buffer: BufferSnapshot?
    /// Latencies since the previous snapshot (sinks only).
    public var recentLatency: LatencyHistogram
    /// Latencies since the start (sinks only).
    public var totalLatency: LatencyHistogram
    /// Component-specific fields, added to the JSON report as they are.
    public var details = JSONObject()
}
