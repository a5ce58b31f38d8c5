internal import SluiceSync
internal import Synchronization

/// Event text buffers given back by the component that let go of their events, for a decoder to fill again.
///
/// A decoder allocates every event's text on its own thread, and the last component to hold the event (a sink, an
/// aggregate that folded it) freed it on another: glibc's allocator then locked the decoder's arena from both
/// threads, once per event, and that lock's cache line moving between the cores was 84 % of `malloc`'s samples,
/// which with `free` were a fifth of stdin -> blackhole. Handed back, a batch's buffers cross as one array under
/// one lock, and the decoder writes the next lines into them without asking the allocator. A buffer that something
/// else still holds is never overwritten: emptying it for reuse copies it first, as it would any array.
package final class TextRecycler: Sendable {
    /// The pool every source and sink of the process shares.
    package static let shared = TextRecycler()

    /// Batches of buffers, each moved in and out whole, so that no buffer is reference-counted on the way, and how
    /// many buffers they hold.
    private let pool = Mutex<(batches: [[[UInt8]]], buffers: Int)>(([], 0))
    /// Buffers the pool holds at most, of at most ``maxBufferBytes`` bytes: 4 MiB at the very most, about 2 with
    /// events of 200 bytes. Counted in buffers, not batches: a `route` splits each batch among its outputs, and
    /// a limit of 8 batches, whatever their size, turned most of its buffers away (a third of its cost went back to
    /// `malloc` and `free`).
    let maxBuffers: Int
    /// Buffers one batch gives back at most.
    let maxBatchBuffers = 1024
    /// A larger buffer (a long line's) is freed, not kept.
    let maxBufferBytes: Int

    package init(maxBuffers: Int = 8 * 1024, maxBufferBytes: Int = 512) {
        self.maxBuffers = maxBuffers
        self.maxBufferBytes = maxBufferBytes
    }

    /// Takes the text buffers of `events`, a whole batch the caller (a sink, an aggregate) is done with, into the
    /// pool while it has room, in the order of their addresses, and empties `events`.
    ///
    /// Buffers filled in address order are written, and read by the next stage, where the hardware's prefetch
    /// has been; a batch split among outputs (a route's, a filter's kept and dropped events) comes back as
    /// scattered parts: refilled in that order, the decoding and the route's reading of the texts took about 60 ns
    /// an event more (`perf`, a route splitting each batch against one sending it all one way). Ordered here (in
    /// one pass for a batch already in order): stdin -> route -> blackhole 0.90 of the wall time and 0.92 of the
    /// CPU, pass-through, dedupe and the aggregate 0.96 to 0.98, scenario 3 and a keyed sample the same (11 to 21
    /// alternating runs). Ordering the tail a stage drops as well, on the decoding threads, gained scenario 3 5 %
    /// of the wall time but cost a keyed sample and the log filters 1 to 3 %, so that is given back as it comes.
    package func recycle(_ events: inout [Event]) {
        recycle(&events, from: 0, inAddressOrder: true)
        events = []
    }

    /// Takes the text buffers of `events[start...]`, which the caller is done with, into the pool while it has
    /// room, and removes those events (the array keeps its capacity).
    package func recycle(_ events: inout [Event], from start: Int) {
        recycle(&events, from: start, inAddressOrder: false)
    }

    private func recycle(_ events: inout [Event], from start: Int, inAddressOrder: Bool) {
        guard start < events.count else { return }
        var buffers: [[UInt8]] = []
        buffers.reserveCapacity(min(events.count - start, maxBatchBuffers))
        events.withUnsafeMutableBufferPointer { events in
            for index in start..<events.count {
                guard buffers.count < maxBatchBuffers, let text = events[index].takeText(),
                    text.capacity <= maxBufferBytes
                else { continue }
                buffers.append(text)
            }
        }
        events.removeLast(events.count - start)
        if inAddressOrder { Self.orderForFilling(&buffers) }
        giveBack(&buffers)
    }

    /// Orders `buffers` so that a decoder, which takes them from the end, fills them lowest address first.
    private static func orderForFilling(_ buffers: inout [[UInt8]]) {
        guard buffers.count > 1 else { return }
        buffers.withUnsafeMutableBufferPointer { buffers in
            // An array is one reference to its storage: seen as words, the buffers are their addresses, and
            // sorting the words only permutes the references, so none is lost, duplicated or needs counting.
            // Nothing reads them as arrays until the closure returns.
            buffers.withMemoryRebound(to: UInt.self) { addresses in
                var addresses = addresses
                addresses.sort()
                addresses.reverse()
            }
        }
    }

    /// One batch of buffers from the pool (empty when it has none), for the caller to fill (``SpareTexts``).
    package func take() -> [[UInt8]] {
        pool.locked { pool in
            guard let batch = pool.batches.popLast() else { return [] }
            pool.buffers -= batch.count
            return batch
        }
    }

    /// Puts `buffers` back as one batch if the pool has room for all of them; if not, they are freed outside the
    /// lock.
    package func giveBack(_ buffers: inout [[UInt8]]) {
        guard !buffers.isEmpty else { return }
        var batch = exchange(&buffers, with: [])
        pool.locked { pool in
            guard pool.buffers + batch.count <= maxBuffers else { return }
            pool.buffers += batch.count
            pool.batches.append(batch)
            batch = []
        }
    }

    /// Buffers in the pool.
    package var count: Int { pool.locked { $0.buffers } }
}

/// A decoding thread's supply of buffers from a ``TextRecycler``: a batch at a time, asked for again only while
/// the pool had one. Give back what is left with ``finish()``.
package struct SpareTexts {
    private let recycler: TextRecycler?
    private var buffers: [[UInt8]] = []
    private var poolIsEmpty: Bool

    /// A supply from `recycler`; with `nil`, none (every buffer new).
    package init(_ recycler: TextRecycler? = .shared) {
        self.recycler = recycler
        poolIsEmpty = recycler == nil
    }

    /// A buffer to fill, emptied (its capacity kept), or a new array.
    package mutating func next() -> [UInt8] {
        if buffers.isEmpty, !poolIsEmpty {
            buffers = recycler?.take() ?? []
            poolIsEmpty = buffers.isEmpty
        }
        guard var text = buffers.popLast() else { return [] }
        text.removeAll(keepingCapacity: true)
        return text
    }

    /// Gives back the buffers not used.
    package mutating func finish() { recycler?.giveBack(&buffers) }
}
