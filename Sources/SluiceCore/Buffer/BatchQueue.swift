/// A FIFO of event slices that counts events, not slices, so a buffer's capacity is exact whatever the batch
/// sizes; the oldest events can be dropped from the front without copying the rest.
struct BatchQueue {
    private var slices: [ArraySlice<Event>] = []
    private var head = 0
    /// The number of events held.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ events: ArraySlice<Event>) {
        guard !events.isEmpty else { return }
        slices.append(events)
        count += events.count
    }

    /// Removes the `n` oldest events.
    mutating func dropFirst(_ n: Int) {
        var left = min(n, count)
        count -= left
        while left > 0 {
            let front = slices[head].count
            if front <= left {
                left -= front
                popFront()
            } else {
                slices[head] = slices[head].dropFirst(left)
                left = 0
            }
        }
    }

    /// A slice of at least this many events is handed on by itself rather than joined with the next ones.
    static let wholeSliceEvents = 128

    /// Removes and returns up to `limit` of the oldest events as one batch: the oldest slice as it is when it fits
    /// and is not small, otherwise the oldest events gathered from the front slices, up to the first slice that is
    /// not small (which the next take hands on whole: a route's few events of one kind between large batches of
    /// another would otherwise cost a copy of every event).
    mutating func take(upTo limit: Int) -> [Event] {
        let total = min(limit, count)
        // The common case on a busy edge: the oldest slice is a producer's whole batch. Handing its array on costs
        // one retain; joining it with the next would copy (retain, and later release) every event. A consumer
        // that lags behind finds several batches waiting: it takes them one by one.
        if total > 0, slices[head].count <= total,
            slices[head].count == total || slices[head].count >= Self.wholeSliceEvents
        {
            let front = slices[head]
            popFront()
            count -= front.count
            return Array(front)
        }
        var batch: [Event] = []
        batch.reserveCapacity(total)
        while batch.count < total {
            let wanted = total - batch.count
            let front = slices[head]
            if !batch.isEmpty, front.count >= Self.wholeSliceEvents { break }
            if front.count <= wanted {
                batch.append(contentsOf: front)
                popFront()
            } else {
                batch.append(contentsOf: front.prefix(wanted))
                slices[head] = front.dropFirst(wanted)
            }
        }
        count -= batch.count
        return batch
    }

    /// The earliest ingest time among the events held, `UInt64.max` when empty.
    var oldestIngestNanos: UInt64 {
        var oldest = UInt64.max
        for slice in slices[head...] { oldest = slice.oldestIngestNanos(below: oldest) }
        return oldest
    }

    /// Removes everything and returns how many events there were.
    mutating func removeAll() -> Int {
        let removed = count
        slices.removeAll()
        head = 0
        count = 0
        return removed
    }

    private mutating func popFront() {
        slices[head] = []
        head += 1
        // Compact now and then, so the array of slices stays proportional to what is buffered.
        if head == slices.count {
            slices.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= slices.count {
            slices.removeFirst(head)
            head = 0
        }
    }
}

extension Collection<Event> {
    /// The earliest ingest time among these events and `bound`.
    func oldestIngestNanos(below bound: UInt64 = .max) -> UInt64 {
        var oldest = bound
        for event in self where event.ingestNanos < oldest { oldest = event.ingestNanos }
        return oldest
    }
}
