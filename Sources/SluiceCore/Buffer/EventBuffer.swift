internal import SluiceSync
internal import Synchronization

/// A component's input buffer: many producers, one consumer, capacity counted in events, and a ``BufferPolicy``
/// for when it is full.
///
/// `block` makes ``send(_:)`` suspend until the consumer makes room, which is how backpressure reaches a source:
/// a waiting stdin source stops reading, and the pipe pushes back on its writer. The drop policies never suspend
/// and count every discarded event under `buffer_full` on the owning component. Events cross in batches, and the
/// consumer takes everything buffered (up to a batch limit) in one call, so the lock is taken once per batch.
///
/// AsyncStream's buffering policies were not used for the drop policies because they count elements: with batches
/// as elements they cannot bound the number of events, and with events as elements every event pays a hop
/// (about 2 µs here). Capacity is exact: a batch that does not fit is split.
public final class EventBuffer: Sendable {
    /// What happens when the buffer is full.
    public let policy: BufferPolicy
    /// The most events handed to the consumer at once.
    public let maxBatch: Int
    private let owner: ComponentMetrics
    private let state: Mutex<State>

    private struct State {
        var queue = BatchQueue()
        /// Producers that have not finished yet; the consumer sees the end when this is 0 and the queue is empty.
        var openProducers: Int
        /// The consumer, parked because the queue was empty.
        var consumer: CheckedContinuation<Void, Never>?
        /// Producers parked because a `block` buffer was full.
        var producers: [CheckedContinuation<Void, Never>] = []
        /// The consumer has gone away (its sink failed): arriving events are discarded.
        var closed = false
        var highWater = 0
        var blockedNanos: UInt64 = 0
    }

    /// Creates a buffer fed by `producers` upstream components, owned by the component `owner` measures.
    public init(policy: BufferPolicy, producers: Int, owner: ComponentMetrics, maxBatch: Int = 1024) {
        precondition(producers > 0, "A buffer needs at least one producer.")
        precondition(maxBatch > 0, "The batch limit must be positive.")
        self.policy = policy
        self.maxBatch = maxBatch
        self.owner = owner
        self.state = Mutex(State(openProducers: producers))
        owner.attach(self)
    }

    // MARK: - Producer side

    /// Adds a batch; with `block`, suspends until all of it fits. Counts the batch as received by the owner and
    /// anything the policy discards under `buffer_full`.
    public func send(_ batch: [Event]) async {
        guard !batch.isEmpty else { return }
        owner.recordReceived(batch.count)
        var remaining = batch[...]
        while true {
            let outcome = state.locked { state in enqueue(&remaining, into: &state) }
            outcome.consumer?.resume()
            if outcome.dropped > 0 { owner.recordDiscarded(outcome.dropped, cause: outcome.dropCause) }
            if remaining.isEmpty || !outcome.mustWait { return }
            await waitForRoom()
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
    }

    /// Applies the policy to `remaining`, leaving in it what a `block` buffer could not take yet.
    private func enqueue(_ remaining: inout ArraySlice<Event>, into state: inout State) -> EnqueueOutcome {
        var outcome = EnqueueOutcome()
        if state.closed {
            // The sink has failed: nothing will ever read these.
            outcome.dropped = remaining.count
            outcome.dropCause = .error
            remaining = []
            return outcome
        }
        switch policy {
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
            state.queue.append(remaining.prefix(room))
            remaining = remaining.dropFirst(room)
            outcome.mustWait = !remaining.isEmpty
        }
        state.highWater = Swift.max(state.highWater, state.queue.count)
        if !state.queue.isEmpty, let consumer = state.consumer {
            state.consumer = nil
            outcome.consumer = consumer
        }
        return outcome
    }

    /// Parks the calling producer until the consumer makes room or goes away, and adds the wait to blocked time.
    private func waitForRoom() async {
        let start = MonotonicClock.nanos()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let parked = state.locked { state -> Bool in
                // Re-check under the lock: the consumer may have made room since `send` looked.
                guard !state.closed, let max = policy.maxEvents, state.queue.count >= max else { return false }
                state.producers.append(continuation)
                return true
            }
            if !parked { continuation.resume() }
        }
        let waited = MonotonicClock.nanos() &- start
        state.locked { $0.blockedNanos &+= waited }
    }

    // MARK: - Consumer side

    /// The next batch of up to ``maxBatch`` events, suspending while the buffer is empty; `nil` once every
    /// producer has finished and everything was taken.
    public func next() async -> [Event]? {
        while true {
            let (batch, producers, finished) = state.locked {
                state -> ([Event], [CheckedContinuation<Void, Never>], Bool) in
                guard !state.queue.isEmpty else { return ([], [], state.openProducers == 0) }
                let batch = state.queue.take(upTo: maxBatch)
                // There is room now: every parked producer retries (each re-checks, so waking all is safe).
                let producers = state.producers
                state.producers.removeAll()
                return (batch, producers, false)
            }
            for producer in producers { producer.resume() }
            if !batch.isEmpty { return batch }
            if finished { return nil }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let parked = state.locked { state -> Bool in
                    guard state.queue.isEmpty, state.openProducers > 0 else { return false }
                    precondition(state.consumer == nil, "Invalid state: a buffer has one consumer.")
                    state.consumer = continuation
                    return true
                }
                if !parked { continuation.resume() }
            }
        }
    }

    /// True when nothing is buffered: a sink flushes its output then, so a slow live feed is never held back.
    public var isEmpty: Bool { state.locked { $0.queue.isEmpty } }

    /// Called by a consumer that can take no more (its sink failed): discards what is buffered and everything
    /// that arrives later under cause `error`, and releases any waiting producer.
    public func close() {
        let (discarded, producers) = state.locked { state -> (Int, [CheckedContinuation<Void, Never>]) in
            state.closed = true
            let producers = state.producers
            state.producers.removeAll()
            return (state.queue.removeAll(), producers)
        }
        for producer in producers { producer.resume() }
        if discarded > 0 { owner.recordDiscarded(discarded, cause: .error) }
    }

    // MARK: - Telemetry

    /// The buffer's state for a metrics report.
    public func snapshot() -> BufferSnapshot {
        state.locked { state in
            BufferSnapshot(
                whenFull: policy.whenFull, maxEvents: policy.maxEvents, events: state.queue.count,
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
