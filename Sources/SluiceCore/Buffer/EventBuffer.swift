internal import Dispatch
internal import SluiceSync
internal import Synchronization

/// A component's input buffer: many producers, one consumer, capacity counted in events, and a ``BufferPolicy``
/// for when it is full.
///
/// `block` makes ``send(_:)`` suspend until the consumer makes room, which is how backpressure reaches a source:
/// a waiting stdin source stops reading, and the pipe pushes back on its writer. The drop policies never suspend
/// and count every discarded event under `buffer_full` on the owning component (`latest_per_key` also counts the
/// events it replaces, under `superseded`). Events cross in batches, and the consumer takes the oldest batch (or
/// gathers small ones, up to a batch limit) in one call, so the lock is taken once per batch.
///
/// AsyncStream's buffering policies were not used for the drop policies because they count elements: with batches
/// as elements they cannot bound the number of events, and with events as elements every event pays a hop
/// (about 2 µs here). Capacity is exact: under `block`, a batch no larger than the capacity goes in whole (its
/// producer waits for room for all of it, at most twice), and a larger one is split.
public final class EventBuffer: Sendable {
    /// What happens when the buffer is full; a reload may change it (``change(to:)``).
    public var policy: BufferPolicy { state.locked { $0.policy } }
    /// The events a source puts in one batch, and the most a buffer hands its consumer at once by default. No
    /// larger than the default capacity (8,000): a batch that fits goes into the buffer whole and comes out as the
    /// same array, where one split at the capacity made the consumer copy every event (retain and release it) to
    /// build its batch: 10 to 15 % of a filter's or a map's time on an edge (measured with 1,024-event batches).
    public static let batchEvents = 1000

    /// The most events handed to the consumer at once.
    public let maxBatch: Int
    private let owner: ComponentMetrics
    private let state: Mutex<State>

    private struct State {
        var policy: BufferPolicy
        var queue = BatchQueue()
        /// The storage of a `latest_per_key` buffer, which uses it instead of `queue`.
        var keyed: KeyedQueue?
        /// Producers that have not finished yet; the consumer sees the end when this is 0 and the queue is empty.
        var openProducers: Int
        /// The consumer, parked because the queue was empty.
        var consumer: CheckedContinuation<Void, Never>?
        /// Counts the consumer's waits, so that a timer set for one wait cannot end a later one.
        var wait = 0
        /// Set by the timer of the current wait when its deadline passed before any event came.
        var timedOut = false
        /// Producers parked because a `block` buffer was full.
        var producers: [CheckedContinuation<Void, Never>] = []
        /// The consumer has gone away (its sink failed): arriving events are discarded.
        var closed = false
        /// The consumer is being replaced (a reload changed its sink): its next read ends its input, once.
        var handingOver = false
        var highWater = 0
        var blockedNanos: UInt64 = 0
        /// The earliest ingest time in the batch the consumer took last, until it asks for the next one (by then
        /// it has passed the batch on, folded it into state it reports itself, or written it); `UInt64.max` when
        /// it holds none.
        var inHandNanos = UInt64.max

        var count: Int { keyed?.count ?? queue.count }
        var isEmpty: Bool { count == 0 }

        mutating func take(upTo limit: Int) -> [Event] {
            keyed == nil ? queue.take(upTo: limit) : keyed!.take(upTo: limit)
        }

        mutating func removeAll() -> Int {
            keyed == nil ? queue.removeAll() : keyed!.removeAll()
        }
    }

    /// Creates a buffer fed by `producers` upstream components, owned by the component `owner` measures.
    public init(
        policy: BufferPolicy, producers: Int, owner: ComponentMetrics, maxBatch: Int = EventBuffer.batchEvents
    ) {
        precondition(producers > 0, "A buffer needs at least one producer.")
        precondition(maxBatch > 0, "The batch limit must be positive.")
        self.maxBatch = maxBatch
        self.owner = owner
        var initial = State(policy: policy, openProducers: producers)
        if case .latestPerKey = policy { initial.keyed = KeyedQueue() }
        self.state = Mutex(initial)
        owner.attach(self)
    }

    // MARK: - Producer side

    /// Adds a batch; with `block`, suspends until all of it fits. Counts the batch as received by the owner and
    /// anything the policy discards under its cause. Given with its ownership, the batch is the array's only owner
    /// once queued, so that a consumer that changes it in place need not copy it first.
    public func send(_ batch: consuming [Event]) async {
        guard !batch.isEmpty else { return }
        owner.recordReceived(batch.count)
        var remaining = batch[...]
        batch = []
        var waits = 0
        while true {
            let whole = waits < Self.wholeBatchWaits
            let outcome = state.locked { state in enqueue(&remaining, into: &state, whole: whole) }
            if let key = outcome.keyedBy {
                // Keys are evaluated outside the lock; the policy may have changed again by then, which
                // `sendLatest` sees.
                remaining = sendLatest(remaining, key: key)[...]
                if remaining.isEmpty { return }
                continue
            }
            outcome.consumer?.resume()
            if outcome.dropped > 0 { owner.recordDiscarded(outcome.dropped, cause: outcome.dropCause) }
            if remaining.isEmpty || !outcome.mustWait { return }
            await waitForRoom(for: whole ? remaining.count : 1)
            waits += 1
        }
    }

    /// How many times a `block` producer waits for room for its whole batch before it puts in what fits: a batch
    /// that goes in whole comes out as the same array, where a split one is copied, event by event, by the
    /// consumer. Bounded, so that a large batch is not kept out for long by smaller ones from other producers.
    static let wholeBatchWaits = 2

    /// Counts one more producer (a reload connected another input); false when every producer had finished
    /// already, so the consumer may have seen its end and the new producer must not send here.
    func addProducer() -> Bool {
        state.locked { state in
            guard state.openProducers > 0 else { return false }
            state.openProducers += 1
            return true
        }
    }

    /// Marks one producer as finished; after the last, the consumer sees the end once the queue is drained.
    public func finishProducer() {
        let consumer = state.locked { state -> CheckedContinuation<Void, Never>? in
            precondition(state.openProducers > 0, "Invalid state: more producers finished than were counted.")
            state.openProducers -= 1
            guard state.openProducers == 0 else { return nil }
            defer { state.consumer = nil }
            return state.consumer
        }
        consumer?.resume()
    }

    private struct EnqueueOutcome {
        var consumer: CheckedContinuation<Void, Never>?
        var dropped = 0
        var dropCause = DiscardCause.bufferFull
        var mustWait = false
        /// Set for a `latest_per_key` buffer: the batch goes in through ``sendLatest(_:key:)``.
        var keyedBy: Expression?
    }

    /// Applies the policy to `remaining`, leaving in it what a `block` buffer could not take yet; with `whole`, a
    /// `block` buffer takes all of a batch that fits its capacity or none of it.
    private func enqueue(_ remaining: inout ArraySlice<Event>, into state: inout State, whole: Bool) -> EnqueueOutcome {
        var outcome = EnqueueOutcome()
        if state.closed {
            // The sink has failed: nothing will ever read these.
            outcome.dropped = remaining.count
            outcome.dropCause = .error
            remaining = []
            return outcome
        }
        switch state.policy {
        case .unbounded:
            state.queue.append(remaining)
            remaining = []
        case .dropNewest(let max):
            let room = Swift.max(0, max - state.queue.count)
            state.queue.append(remaining.prefix(room))
            outcome.dropped = Swift.max(0, remaining.count - room)
            remaining = []
        case .dropOldest(let max):
            state.queue.append(remaining)
            outcome.dropped = Swift.max(0, state.queue.count - max)
            state.queue.dropFirst(outcome.dropped)
            remaining = []
        case .block(let max):
            let room = Swift.max(0, max - state.queue.count)
            if whole, room < remaining.count, remaining.count <= max {
                // The queue holds events (the batch fits an empty one): the consumer will make room.
                outcome.mustWait = true
                return outcome
            }
            state.queue.append(remaining.prefix(room))
            remaining = remaining.dropFirst(room)
            outcome.mustWait = !remaining.isEmpty
        case .latestPerKey(_, let key):
            outcome.keyedBy = key
            return outcome
        }
        state.highWater = Swift.max(state.highWater, state.queue.count)
        outcome.consumer = wakeConsumer(&state)
        return outcome
    }

    /// A `latest_per_key` buffer never waits: each event replaces its key's buffered event or takes a place, the
    /// oldest key making room when `max` are buffered. Keys are evaluated before the lock is taken; an event whose
    /// key cannot be evaluated is discarded under `error`. Returns the events to send again when a reload changed
    /// the policy meanwhile (they were not counted here).
    private func sendLatest(_ batch: ArraySlice<Event>, key: Expression) -> [Event] {
        var discards = DiscardCounts()
        let keyed = Self.keyed(batch, by: key, &discards)
        let (consumer, again) = state.locked { state -> (CheckedContinuation<Void, Never>?, [Event]) in
            if state.closed {
                discards[.error] += keyed.count
                return (nil, [])
            }
            guard case .latestPerKey(let max, let current) = state.policy, current.source == key.source else {
                return (nil, keyed.map(\.0))
            }
            Self.insert(keyed, max: max, into: &state.keyed!, &discards)
            state.highWater = Swift.max(state.highWater, state.count)
            return (wakeConsumer(&state), [])
        }
        consumer?.resume()
        owner.recordDiscarded(discards)
        return again
    }

    /// Each event with its key; an event whose key cannot be evaluated is left out and counted under `error`.
    private static func keyed(
        _ events: some Collection<Event>, by key: Expression, _ discards: inout DiscardCounts
    ) -> [(Event, JSONValue)] {
        var keyed: [(Event, JSONValue)] = []
        keyed.reserveCapacity(events.count)
        for event in events {
            do {
                keyed.append((event, try key.evaluate(event)))
            } catch {
                discards[.error] += 1
            }
        }
        return keyed
    }

    private static func insert(
        _ keyed: [(Event, JSONValue)], max: Int, into queue: inout KeyedQueue, _ discards: inout DiscardCounts
    ) {
        for (event, value) in keyed {
            switch queue.insert(event, key: value, max: max) {
            case .added: break
            case .superseded: discards[.superseded] += 1
            case .droppedOldest: discards[.bufferFull] += 1
            }
        }
    }

    /// Applies another policy (a reload changed the component's `buffer`) to what is buffered and to what comes:
    /// events over a smaller `drop_oldest` capacity, and events a `latest_per_key` buffer replaces, are discarded
    /// and counted as if they had just arrived; over a smaller `block` or `drop_newest` capacity the buffer drains
    /// to it before it takes more. Waiting producers look again.
    public func change(to policy: BufferPolicy) {
        var discards = DiscardCounts()
        let (producers, consumer) = state.locked {
            state -> ([CheckedContinuation<Void, Never>], CheckedContinuation<Void, Never>?) in
            state.policy = policy
            let buffered = state.take(upTo: .max)
            state.keyed = nil
            switch policy {
            case .latestPerKey(let max, let key):
                // Keyed here, under the lock, once: a reload is rare, and nothing may arrive in between.
                var queue = KeyedQueue()
                Self.insert(Self.keyed(buffered, by: key, &discards), max: max, into: &queue, &discards)
                state.keyed = queue
            case .dropOldest(let max) where buffered.count > max:
                state.queue.append(buffered.dropFirst(buffered.count - max))
                discards[.bufferFull] += buffered.count - max
            default:
                state.queue.append(buffered[...])
            }
            defer { state.producers.removeAll() }
            return (state.producers, wakeConsumer(&state))
        }
        for producer in producers { producer.resume() }
        consumer?.resume()
        owner.recordDiscarded(discards)
    }

    /// The parked consumer, taken out of `state` when there is something for it.
    private func wakeConsumer(_ state: inout State) -> CheckedContinuation<Void, Never>? {
        guard !state.isEmpty, let consumer = state.consumer else { return nil }
        state.consumer = nil
        return consumer
    }

    /// Parks the calling producer until the consumer may have made room for `events` events (or goes away), and adds
    /// the wait to blocked time.
    private func waitForRoom(for events: Int) async {
        let start = MonotonicClock.nanos()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let parked = state.locked { state -> Bool in
                // Re-check under the lock: the consumer may have made room since `send` looked. A producer with
                // more left than the capacity waits for the buffer to be empty, not for room it can never have
                // (it would sleep through the consumer's emptying it, and nothing would wake it again).
                guard !state.closed, let max = state.policy.maxEvents, max - state.queue.count < min(events, max)
                else {
                    return false
                }
                state.producers.append(continuation)
                return true
            }
            if !parked { continuation.resume() }
        }
        let waited = MonotonicClock.nanos() &- start
        state.locked { $0.blockedNanos &+= waited }
    }

    // MARK: - Consumer side

    /// What the consumer's wait for input ended with.
    public enum Read: Sendable {
        /// A batch of up to ``maxBatch`` events.
        case events([Event])
        /// The deadline has passed (see ``next(deadlineMillis:)``).
        case timedOut
        /// Every producer has finished and everything was taken.
        case finished
    }

    /// The next batch of up to ``maxBatch`` events, suspending while the buffer is empty; `nil` once every
    /// producer has finished and everything was taken.
    public func next() async -> [Event]? {
        if case .events(let batch) = await next(deadlineMillis: nil) { return batch }
        return nil
    }

    /// The next batch, or ``Read/timedOut`` once the wall clock has reached `deadlineMillis` (milliseconds since
    /// the Unix epoch). A deadline that has passed is answered before anything buffered, so that a stateful
    /// transform closes what time has closed before it takes later events. A deadline costs one timer per wait
    /// that actually parks, never one per event: while events keep coming, the consumer does not park at all.
    public func next(deadlineMillis: Int64?) async -> Read {
        while true {
            if let deadlineMillis, deadlineMillis <= WallClock.nowMillis() { return .timedOut }
            let (batch, producers, finished) = state.locked {
                state -> ([Event], [CheckedContinuation<Void, Never>], Bool) in
                state.inHandNanos = .max
                if state.handingOver {
                    state.handingOver = false
                    return ([], [], true)
                }
                guard !state.isEmpty else { return ([], [], state.openProducers == 0) }
                let batch = state.take(upTo: maxBatch)
                state.inHandNanos = batch.oldestIngestNanos()
                // There is room now: every parked producer retries (each re-checks, so waking all is safe).
                let producers = state.producers
                state.producers.removeAll()
                return (batch, producers, false)
            }
            for producer in producers { producer.resume() }
            if !batch.isEmpty {
                // What a sink takes is what it writes: its tap shows that.
                if owner.kind == .sink { owner.tap.offer(batch) }
                return .events(batch)
            }
            if finished { return .finished }
            let timedOut = await park(until: deadlineMillis)
            if timedOut { return .timedOut }
        }
    }

    /// Parks the consumer until events arrive, the producers finish, or `deadlineMillis` passes; true in the last
    /// case.
    private func park(until deadlineMillis: Int64?) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wait = state.locked { state -> Int? in
                guard state.isEmpty, state.openProducers > 0, !state.handingOver else { return nil }
                precondition(state.consumer == nil, "Invalid state: a buffer has one consumer.")
                state.consumer = continuation
                state.wait += 1
                state.timedOut = false
                return state.wait
            }
            guard let wait else {
                continuation.resume()
                return
            }
            if let deadlineMillis {
                let delay = max(0, deadlineMillis - WallClock.nowMillis())
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(delay))) { [self] in
                    let consumer = state.locked { state -> CheckedContinuation<Void, Never>? in
                        // Only this wait's timer may end it; a stale one finds another wait, or none.
                        guard state.wait == wait, let consumer = state.consumer else { return nil }
                        state.consumer = nil
                        state.timedOut = true
                        return consumer
                    }
                    consumer?.resume()
                }
            }
        }
        return state.locked { state in
            defer { state.timedOut = false }
            return state.timedOut
        }
    }

    /// Ends the input of the current consumer at its next read, as if every producer had finished, without losing
    /// an event: what is buffered stays for the consumer that takes over (a sink replaced by a reload).
    public func handOver() {
        let consumer = state.locked { state -> CheckedContinuation<Void, Never>? in
            state.handingOver = true
            defer { state.consumer = nil }
            return state.consumer
        }
        consumer?.resume()
    }

    /// True when nothing is buffered: a sink flushes its output then, so a slow live feed is never held back.
    public var isEmpty: Bool { state.locked { $0.isEmpty } }

    /// Called by a consumer that can take no more (its sink failed): discards what is buffered and everything
    /// that arrives later under cause `error`, and releases any waiting producer.
    public func close() {
        let (discarded, producers) = state.locked { state -> (Int, [CheckedContinuation<Void, Never>]) in
            state.closed = true
            let producers = state.producers
            state.producers.removeAll()
            return (state.removeAll(), producers)
        }
        for producer in producers { producer.resume() }
        if discarded > 0 { owner.recordDiscarded(discarded, cause: .error) }
    }

    /// The earliest ingest time among the events buffered and the batch the consumer holds; `UInt64.max` when
    /// there are none. See ``PipelineRunner/heldSinceNanos()``.
    public var oldestHeldIngestNanos: UInt64 {
        state.locked { state in
            min(state.inHandNanos, state.keyed?.oldestIngestNanos ?? state.queue.oldestIngestNanos)
        }
    }

    // MARK: - Telemetry

    /// The buffer's state for a metrics report.
    public func snapshot() -> BufferSnapshot {
        state.locked { state in
            BufferSnapshot(
                whenFull: state.policy.whenFull, maxEvents: state.policy.maxEvents, events: state.count,
                highWaterEvents: state.highWater, blockedSecsTotal: Double(state.blockedNanos) / 1e9,
                producersBlocked: state.producers.count)
        }
    }
}

/// An input buffer's fill and history at one moment.
public struct BufferSnapshot: Sendable, Equatable {
    /// The policy word.
    public var whenFull: String
    /// The capacity, or `nil` when unbounded.
    public var maxEvents: Int?
    /// Events buffered now.
    public var events: Int
    /// The most events ever buffered at once.
    public var highWaterEvents: Int
    /// Seconds producers have spent waiting for room, summed over producers.
    public var blockedSecsTotal: Double
    /// Producers waiting for room right now.
    public var producersBlocked: Int
}
