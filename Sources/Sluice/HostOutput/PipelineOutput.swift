internal import SluiceCore
internal import SluiceSync
internal import Synchronization

/// The events reaching a `host` sink, as an `AsyncSequence`. It ends when everything upstream has ended and the
/// sink's buffer is drained.
///
/// Events are taken from the sink's buffer a batch at a time (one hop per batch, not per event); each batch counts
/// as sent, with its latency, when the iterator takes it. ``batches`` gives those batches whole, which is faster
/// still. Like `AsyncStream`, an output has one consumer: iterating it from two tasks at once stops the program.
public struct PipelineOutput: AsyncSequence, Sendable {
    /// Each element is one event.
    public typealias Element = Event
    /// Reading an output never throws.
    public typealias Failure = Never

    let port: HostOutputPort

    /// The sink's id.
    public var id: String { port.id }

    /// An iterator over the output's events; one iterator at a time.
    public func makeAsyncIterator() -> Iterator { Iterator(port: port) }

    /// The same events, as the batches the sink's buffer hands out.
    public var batches: Batches { Batches(port: port) }

    /// Reads the output's events one at a time from the batch in hand.
    public struct Iterator: AsyncIteratorProtocol {
        let port: HostOutputPort
        private var batch: [Event] = []
        private var index = 0

        init(port: HostOutputPort) { self.port = port }

        /// The next event, waiting for the next batch when the one in hand is used up; `nil` at the end.
        public mutating func next() async -> Event? {
            if index == batch.count {
                guard let next = await port.nextBatch() else { return nil }
                batch = next
                index = 0
            }
            defer { index += 1 }
            return batch[index]
        }
    }

    /// The output as batches of events.
    public struct Batches: AsyncSequence, Sendable {
        /// Each element is a batch of events, as the sink's buffer hands it out.
        public typealias Element = [Event]
        /// Reading an output never throws.
        public typealias Failure = Never
        let port: HostOutputPort

        /// An iterator over the output's batches; one iterator at a time.
        public func makeAsyncIterator() -> Iterator { Iterator(port: port) }

        /// Reads one batch per step.
        public struct Iterator: AsyncIteratorProtocol {
            let port: HostOutputPort

            /// The next batch, counted as sent when taken; `nil` at the end.
            public mutating func next() async -> [Event]? { await port.nextBatch() }
        }
    }
}

/// Where a `host` sink and the host's iterator meet: the sink attaches its buffer and waits; the iterator waits
/// for the buffer, reads it, and releases the sink at the end (or when the host stops reading).
final class HostOutputPort: Sendable {
    let id: String
    private struct State {
        var buffer: EventBuffer?
        var metrics: ComponentMetrics?
        var waitingReader: CheckedContinuation<Void, Never>?
        var waitingSink: CheckedContinuation<Void, Never>?
        /// True once the buffer ended or the host gave up reading: nothing more is read.
        var released = false
        /// True while an iterator is inside ``nextBatch()``.
        var reading = false
    }

    private let state = Mutex(State())

    init(id: String) { self.id = id }

    /// Run by the sink: offers `buffer` to the reader and returns once the reader is done with it.
    func serve(_ buffer: EventBuffer, metrics: ComponentMetrics) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (reader, releasedAlready) = state.locked { state in
                state.buffer = buffer
                state.metrics = metrics
                if !state.released { state.waitingSink = continuation }
                return (state.waitingReader.take(), state.released)
            }
            reader?.resume()
            if releasedAlready { continuation.resume() }
        }
    }

    /// The next batch, counted as sent; `nil` at the end, or after ``release()``.
    func nextBatch() async -> [Event]? {
        guard let buffer = await claimBuffer() else { return nil }
        let batch = await buffer.next()
        let (metrics, sink, released) = state.locked { state in
            state.reading = false
            if batch == nil { state.released = true }
            let sink = state.released ? state.waitingSink.take() : nil
            return (state.metrics, sink, state.released)
        }
        sink?.resume()
        guard let batch else { return nil }
        if released {
            // Released while this read waited: the batch left the buffer, so it is counted here.
            metrics?.recordDiscarded(batch.count, cause: .error)
            return nil
        }
        metrics?.recordWritten(batch, at: MonotonicClock.nanos())
        return batch
    }

    /// Waits until the sink attached its buffer and marks it as being read; `nil` once released.
    private func claimBuffer() async -> EventBuffer? {
        while true {
            let claimed = state.locked { state -> EventBuffer?? in
                precondition(
                    !state.reading,
                    "PipelineOutput '\(id)' is iterated by two tasks at once; like AsyncStream, an output has one consumer"
                )
                if state.released { return .some(nil) }
                guard let buffer = state.buffer else { return nil }
                state.reading = true
                return .some(buffer)
            }
            if let claimed { return claimed }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let parked = state.locked { state in
                    guard !state.released, state.buffer == nil else { return false }
                    state.waitingReader = continuation
                    return true
                }
                if !parked { continuation.resume() }
            }
        }
    }

    /// The host stopped reading (its body returned): the sink lets go of its buffer, whose remaining events are
    /// discarded and counted, and a reader waiting for the buffer gets `nil`. True when the output had not ended.
    func release() -> Bool {
        let (sink, reader, ended) = state.locked { state in
            let ended = state.released
            state.released = true
            return (state.reading ? nil : state.waitingSink.take(), state.waitingReader.take(), ended)
        }
        sink?.resume()
        reader?.resume()
        return !ended
    }
}
