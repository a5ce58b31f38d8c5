/// The storage of a `latest_per_key` buffer: at most one event per key, in the order their keys first arrived, so
/// that a slow consumer sees every key's newest value instead of a backlog.
struct KeyedQueue {
    private var events: [Event] = []
    private var keys: [JSONValue] = []
    /// Entries before `head` have been taken or dropped.
    private var head = 0
    /// Each buffered key's index into `events`.
    private var positions: [JSONValue: Int] = [:]

    /// The number of events (and keys) held.
    var count: Int { events.count - head }

    var isEmpty: Bool { count == 0 }

    /// The earliest ingest time among the events held, `UInt64.max` when empty.
    var oldestIngestNanos: UInt64 { events[head...].oldestIngestNanos() }

    /// What inserting one event did besides holding it.
    enum Insertion {
        /// The key was new and there was room.
        case added
        /// The key was buffered: its event was replaced in place.
        case superseded
        /// The key was new and `max` keys were buffered: the oldest was dropped to make room.
        case droppedOldest
    }

    mutating func insert(_ event: Event, key: JSONValue, max: Int) -> Insertion {
        if let position = positions[key] {
            events[position] = event
            return .superseded
        }
        var insertion = Insertion.added
        if count >= max {
            positions[keys[head]] = nil
            events[head] = Event(.null)
            keys[head] = .null
            head += 1
            insertion = .droppedOldest
        }
        positions[key] = events.count
        events.append(event)
        keys.append(key)
        compact()
        return insertion
    }

    /// Removes and returns up to `limit` of the oldest keys' events.
    mutating func take(upTo limit: Int) -> [Event] {
        let end = head + min(limit, count)
        let batch = Array(events[head..<end])
        for index in head..<end {
            positions[keys[index]] = nil
            events[index] = Event(.null)
            keys[index] = .null
        }
        head = end
        compact()
        return batch
    }

    /// Removes everything and returns how many events there were.
    mutating func removeAll() -> Int {
        let removed = count
        self = KeyedQueue()
        return removed
    }

    /// Drops the taken front now and then, so that memory stays proportional to what is buffered.
    private mutating func compact() {
        if head == events.count {
            events.removeAll(keepingCapacity: true)
            keys.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024, head * 2 >= events.count {
            events.removeFirst(head)
            keys.removeFirst(head)
            for index in keys.indices { positions[keys[index]] = index }
            head = 0
        }
    }
}
