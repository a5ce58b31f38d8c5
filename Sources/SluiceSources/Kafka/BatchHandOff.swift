internal import SluiceSync
internal import Synchronization

/// Batches passed from a thread of a C library's (which must never wait on Swift's pool) to a source's task.
///
/// ``put(_:)`` never waits: the thread asks ``isFull`` and stops reading at the source instead (Kafka pauses its
/// partitions), so the hand-off holds at most about `capacity` batches. `onTake` runs when the task took a batch
/// from a full hand-off, so that the thread can start reading again at once.
final class BatchHandOff<Batch: Sendable>: Sendable {
    private let capacity: Int
    private let onTake: @Sendable () -> Void
    private let state = Mutex(State())

    private struct State {
        var batches: [Batch] = []
        var finished = false
        var waiter: CheckedContinuation<Batch?, Never>?
    }

    init(capacity: Int, onTake: @escaping @Sendable () -> Void) {
        self.capacity = capacity
        self.onTake = onTake
    }

    var isFull: Bool { state.locked { $0.batches.count >= capacity } }

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
            if taken.wasFull { onTake() }
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
