internal import SluiceSync
internal import Synchronization

/// A component's outgoing edge: every batch goes to the input buffer of each consumer, in turn.
///
/// With a `block` consumer, ``send(_:)`` waits for room, which is how backpressure travels upstream. A reload may
/// add consumers (from the next batch on) and remove them: a removed consumer is told this producer is done once no
/// send is under way, so a batch is never half delivered and a consumer never sees its end before the last batch.
public final class EventOutput: Sendable {
    private let edges: Mutex<Edges>
    private let metrics: ComponentMetrics?
    private let tap: TapPoint
    private let name: String?

    private struct Edges {
        var targets: [EventBuffer]
        /// Sends under way (a source may send from more than one task).
        var sending = 0
        /// Consumers removed while a send was under way: they are finished when it ends.
        var detached: [EventBuffer] = []
        /// True once the producer finished: a consumer added later is finished at once.
        var finished = false
        /// Stateless transforms fused into the source this edge leaves, run on every batch before it goes out.
        var chain: SourceChain?
        /// Once a reload has split those transforms off: the consumers to send to instead (their input buffers),
        /// taken at the first send that no other send overlaps, so that no batch overtakes one sent before.
        var unfused: [EventBuffer]?

        /// The consumers to tell now that this producer is done with them.
        mutating func takeDetachedIfIdle() -> [EventBuffer] {
            guard sending == 0 else { return [] }
            defer { detached = [] }
            return detached
        }
    }

    /// An edge into `targets` that counts what it sends on `metrics`.
    public init(targets: [EventBuffer], metrics: ComponentMetrics) {
        edges = Mutex(Edges(targets: targets))
        self.metrics = metrics
        self.tap = metrics.tap
        self.name = nil
    }

    /// The edge out of the source `chain.source` counts, through `chain`, into `targets`, the consumers of the
    /// chain's last transform: what it sends is counted as that transform's.
    init(targets: [EventBuffer], through chain: SourceChain) {
        edges = Mutex(Edges(targets: targets, chain: chain))
        self.metrics = chain.source
        self.tap = chain.source.tap
        self.name = nil
    }

    /// The named output `name` of the component `metrics` counts: it counts nothing itself, as its transform
    /// counts each event once, however many outputs it went to.
    public init(targets: [EventBuffer], namedOutput name: String, of metrics: ComponentMetrics) {
        edges = Mutex(Edges(targets: targets))
        self.metrics = nil
        self.tap = metrics.tap
        self.name = name
    }

    /// Sends `batches` in order, letting go of each as it is sent: a consumer that changes a batch in place then
    /// holds the array's only reference and need not copy it first (while a source kept its whole list of batches
    /// until the last was sent, every filter and map copied every batch it was given).
    public func send(batches: consuming [[Event]]) async {
        var batches = batches
        for index in batches.indices where !batches[index].isEmpty {
            await send(exchange(&batches[index], with: []))
        }
    }

    /// Sends `batch` to every consumer and counts it once as sent (through the source's fused transforms first,
    /// while it has them). Given with its ownership, the batch reaches the consumer as the array's only owner.
    public func send(_ batch: consuming [Event]) async {
        guard !batch.isEmpty else { return }
        let (targets, chain, unfusedFrom) = edges.locked { edges -> ([EventBuffer], SourceChain?, [EventBuffer]) in
            var unfusedFrom: [EventBuffer] = []
            if let unfused = edges.unfused, edges.sending == 0 {
                // No send is under way: everything the chain sent has reached its consumers.
                unfusedFrom = edges.targets
                edges.targets = unfused
                edges.unfused = nil
                edges.chain = nil
            }
            edges.sending += 1
            return (edges.targets, edges.chain, unfusedFrom)
        }
        for target in unfusedFrom { target.finishProducer() }
        chain?.run(&batch)
        if !batch.isEmpty {
            (chain?.last ?? metrics)?.recordSent(batch.count)
            (chain?.last.tap ?? tap).offer(batch, output: name)
            await Self.deliver(consume batch, to: targets)
        }
        let detached = edges.locked { edges in
            edges.sending -= 1
            return edges.takeDetachedIfIdle()
        }
        for target in detached { target.finishProducer() }
    }

    /// The source's fused transforms, for a source that makes its batches on several threads: it runs an instance
    /// on each thread (``SourceChain/makeRunner()``) and sends what is left with ``send(processed:)``. `nil` when
    /// the source has none, or a reload is splitting them off (then the source sends with ``send(batches:)``, whose
    /// first send makes the switch).
    package var chain: SourceChain? { edges.locked { $0.unfused == nil ? $0.chain : nil } }

    /// Sends `batches` that the source's fused transforms (``chain``, as it was when they were made) already ran
    /// on, letting go of each as it is sent. They go where the chain's batches go, even once a reload is splitting
    /// it off, as they must not pass those transforms again; the switch waits for the next ``send(_:)``.
    package func send(processed batches: consuming [[Event]]) async {
        var batches = batches
        for index in batches.indices where !batches[index].isEmpty {
            let batch = batches[index]
            batches[index] = []
            let (targets, chain) = edges.locked { edges in
                edges.sending += 1
                return (edges.targets, edges.chain)
            }
            precondition(chain != nil, "Processed batches are sent only while the chain that ran on them is fused.")
            chain?.last.recordSent(batch.count)
            chain?.last.tap.offer(batch)
            await Self.deliver(consume batch, to: targets)
            let detached = edges.locked { edges in
                edges.sending -= 1
                return edges.takeDetachedIfIdle()
            }
            for target in detached { target.finishProducer() }
        }
    }

    /// Sends `batch` to each of `targets`: the last gets it as it is, each other one a copy that shares no text with
    /// it (``Event/copy(into:)``), so that no consumer writes what another may still read.
    private static func deliver(_ batch: consuming [Event], to targets: [EventBuffer]) async {
        guard let last = targets.last else { return }
        if targets.count > 1 {
            var spare = SpareTexts()
            for target in targets.dropLast() { await target.send(batch.copies(into: &spare)) }
            spare.finish()
        }
        await last.send(consume batch)
    }

    /// Stops running the source's fused transforms and sends into `targets` (the first transform's new input
    /// buffer, which counts this edge as its producer) from the first send that no other overlaps; the consumers
    /// it sent to until then are told this producer is done at that moment.
    func unfuse(into targets: [EventBuffer]) {
        let finishNow = edges.locked { edges -> [EventBuffer] in
            guard !edges.finished else { return targets }
            edges.unfused = targets
            return []
        }
        for target in finishNow { target.finishProducer() }
    }

    /// True once the producer finished.
    var isFinished: Bool { edges.locked { $0.finished } }

    /// Tells every consumer that this producer is done.
    func finish() {
        let targets = edges.locked { edges in
            edges.finished = true
            defer {
                edges.targets = []
                edges.unfused = nil
            }
            return edges.targets + edges.detached + (edges.unfused ?? [])
        }
        for target in targets { target.finishProducer() }
    }

    /// Between two batches, adds `attach` as consumers (the caller has counted this output among their
    /// producers) and removes `detach`, which are told this producer is done once no send is under way: each batch
    /// goes wholly to the consumers before the change or wholly to those after it.
    func rewire(attach: [EventBuffer], detach: [EventBuffer]) {
        let finishNow = edges.locked { edges -> [EventBuffer] in
            if edges.finished { return attach }
            // After an unfuse, the consumers from the switch on change (nothing has been sent to them yet).
            if var unfused = edges.unfused {
                unfused += attach
                let gone = unfused.filter { target in detach.contains { $0 === target } }
                unfused.removeAll { target in detach.contains { $0 === target } }
                edges.unfused = unfused
                return gone
            }
            edges.targets += attach
            for target in detach {
                guard let index = edges.targets.firstIndex(where: { $0 === target }) else { continue }
                edges.detached.append(edges.targets.remove(at: index))
            }
            return edges.takeDetachedIfIdle()
        }
        for target in finishNow { target.finishProducer() }
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
    /// Fires when the pipeline is asked to stop, when a reload removes the source, or when it replaces it with
    /// new options (then ``handOver`` is wanted); the source then returns soon.
    public let stop: StopSignal
    /// Where the source takes the place a previous instance left, and leaves its own when a reload replaces it.
    public let handOver: SourceHandOver
    /// Every event ingested before this time (``MonotonicClock`` nanoseconds) is finished: written by the sinks
    /// it reached, or discarded; a source that keeps positions (the `file` source) commits only those.
    public let finishedBefore: @Sendable () -> UInt64

    /// The context of the instance that replaces this one: the same output and counters.
    func next(stop: StopSignal, handOver: SourceHandOver) -> SourceContext {
        SourceContext(
            id: id, output: output, metrics: metrics, log: log, stop: stop, handOver: handOver,
            finishedBefore: finishedBefore)
    }
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
