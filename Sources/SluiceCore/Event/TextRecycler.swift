internal import SluiceSync
internal import Synchronization

/// Event text buffers given back by the component that let go of their events, for a decoder to fill again.
///
/// A decoder allocates every event's text on its own thread, and the last component to hold the event (a sink, an
/// aggregate that folded it) freed it on another: glibc's allocator then locked the decoder's arena from both
/// threads, once per event, and that lock's cache line moving between the cores was 84 % of `malloc`'s samples,
/// which with `free` were a fifth of stdin -> blackhole. Handed back, a batch's buffers cross under one lock, and
/// the decoder writes the next lines into them without asking the allocator. A buffer that something else still
/// holds (a fan-out's other branch) is never overwritten: emptying it for reuse copies it first, as it would any
/// array.
package final class TextRecycler: Sendable {
    /// The pool every source and sink of the process shares.
    package static let shared = TextRecycler()

    private let pool = Mutex<[[UInt8]]>([])
    /// What the pool holds at most: two default batches, and so never much memory (at most 2 MiB).
    let maxBuffers: Int
    /// A larger buffer (a long line's) is freed, not kept.
    let maxBufferBytes: Int

    package init(maxBuffers: Int = 2048, maxBufferBytes: Int = 1024) {
        self.maxBuffers = maxBuffers
        self.maxBufferBytes = maxBufferBytes
    }

    /// Takes the text buffers of `events`, which the caller is done with, into the pool while it has room, and
    /// empties `events`.
    package func recycle(_ events: inout [Event]) {
        guard !events.isEmpty else { return }
        var buffers: [[UInt8]] = []
        buffers.reserveCapacity(events.count)
        events.forEachInPlace { event in
            guard let text = event.takeText(), text.capacity <= maxBufferBytes else { return }
            buffers.append(text)
        }
        events.removeAll()
        giveBack(&buffers)
    }

    /// Up to `count` buffers from the pool, for the caller to fill (``EventDecoding/decodeEvent(_:scanner:ingestNanos:reusing:)``).
    package func take(upTo count: Int) -> [[UInt8]] {
        pool.locked { pool in
            guard pool.count > count else {
                var taken: [[UInt8]] = []
                swap(&taken, &pool)
                return taken
            }
            let taken = Array(pool.suffix(count))
            pool.removeLast(count)
            return taken
        }
    }

    /// Puts `buffers` (taken with ``take(upTo:)`` and not used) back while the pool has room.
    package func giveBack(_ buffers: inout [[UInt8]]) {
        guard !buffers.isEmpty else { return }
        // Moved whole into an empty pool (no reference counted twice); what does not fit is freed outside the lock.
        pool.locked { pool in
            if pool.isEmpty, buffers.count <= maxBuffers {
                swap(&pool, &buffers)
            } else {
                pool.append(contentsOf: buffers.prefix(max(0, maxBuffers - pool.count)))
            }
        }
    }

    /// Buffers in the pool.
    package var count: Int { pool.locked { $0.count } }
}
