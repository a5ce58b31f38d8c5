internal import Dispatch
internal import SluiceSync
internal import Synchronization

/// Batches passed from a thread of a C library's (which must never wait on Swift's pool) to a source's task.
///
/// ``put(_:)`` never waits: the thread asks ``isFull`` or ``waitForRoom(upToNanos:)`` and stops reading at the source
/// instead (Kafka pauses its partitions), so the hand-off holds at most about `capacity` batches. `onTake` runs when
/// the task took a batch from a full hand-off, so that the thread can start reading again at once.
final class BatchHandOff<Batch: Sendable>: Sendable {
    private let capacity: Int
    private let onTake: @Sendable () -> Void
    private let state = Mutex(State())
    /// Signalled when the thread waits in ``waitForRoom(upToNanos:)`` and a batch is taken or waits end.
    private let room = DispatchSemaphore(value: 0)

    private struct State {
        var batches: [Batch] = []
        var finished = false
        var waiter: CheckedContinuation<Batch?, Never>?
        /// The thread waits for room.
        var roomWanted = false
        var waitsEnded = false
    }

    init(capacity: Int, onTake: @escaping @Sendable () -> Void) {
        self.capacity = capacity
        self.onTake = onTake
    }

    var isFull: Bool { state.locked { $0.batches.count >= capacity } }

    /// Waits on the thread, while the hand-off is full, until the task takes a batch or `nanos` pass; at once after
    /// ``endWaits()``. True when it has room.
    func waitForRoom(upToNanos nanos: UInt64) -> Bool {
        let (full, waits) = state.locked { state in
            state.roomWanted = !state.waitsEnded && state.batches.count >= capacity
            return (state.batches.count >= capacity, state.roomWanted)
        }
        guard waits else { return !full }
        if room.wait(timeout: .now() + .nanoseconds(Int(nanos))) == .timedOut {
            let signalComing = state.locked { state in
                defer { state.roomWanted = false }
                return !state.roomWanted
            }
            // Woken just as the time ran out: its signal is consumed, so that none is left for the next wait.
            if signalComing { room.wait() }
        }
        return !isFull
    }

    /// Whether the thread waits in ``waitForRoom(upToNanos:)`` now.
    var threadWaits: Bool { state.locked { $0.roomWanted } }

    /// Ends a ``waitForRoom(upToNanos:)`` that waits, and makes every later one return at once; from any thread.
    func endWaits() {
        wakeWaitingThread(endingWaits: true)
    }

    private func wakeWaitingThread(endingWaits: Bool = false) {
        let waits = state.locked { state in
            defer { state.roomWanted = false }
            state.waitsEnded = state.waitsEnded || endingWaits
            return state.roomWanted
        }
        if waits { room.signal() }
    }

    func put(_ batch: Batch) {
        let waiter = state.locked { state -> CheckedContinuation<Batch?, Never>? in
            guard let waiter = state.waiter.take() else {
                state.batches.append(batch)
                return nil
            }
            return waiter
        }
        if let waiter {
            ThreadSanitizerHandOff.send()
            waiter.resume(returning: batch)
        }
    }

    /// No batch follows those already put.
    func finish() {
        let waiter = state.locked { state -> CheckedContinuation<Batch?, Never>? in
            state.finished = true
            return state.waiter.take()
        }
        waiter?.resume(returning: nil)
    }

    /// The next batch, or `nil` once finished and empty. One task calls it at a time.
    func next() async -> Batch? {
        let taken = state.locked { state -> (batch: Batch?, wasFull: Bool, ended: Bool) in
            guard !state.batches.isEmpty else { return (nil, false, state.finished) }
            let wasFull = state.batches.count >= capacity
            return (state.batches.removeFirst(), wasFull, false)
        }
        if let batch = taken.batch {
            if taken.wasFull {
                wakeWaitingThread()
                onTake()
            }
            return batch
        }
        if taken.ended { return nil }
        let batch = await withCheckedContinuation { (waiter: CheckedContinuation<Batch?, Never>) in
            let ready = state.locked { state -> (batch: Batch?, ended: Bool, parked: Bool) in
                if !state.batches.isEmpty { return (state.batches.removeFirst(), false, false) }
                if state.finished { return (nil, true, false) }
                state.waiter = waiter
                return (nil, false, true)
            }
            if !ready.parked { waiter.resume(returning: ready.batch) }
        }
        ThreadSanitizerHandOff.receive()
        return batch
    }
}
