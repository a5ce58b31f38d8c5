/// Where a source's input stood after each of its sends, kept until the events of that send are finished, so
/// that the source commits a position (a file offset, a Kafka offset) only once everything before it is written
/// or discarded on purpose (``SourceContext/finishedBefore``).
///
/// Memory stays bounded while nothing finishes (a sink that keeps failing): past ``limit`` entries, a new one is
/// merged into the last, which then waits for the later of the two times; a commit is only ever later, never
/// too early.
public struct PendingPositions<Key: Hashable & Sendable, Position: Sendable>: Sendable {
    private var waiting: [(madeBefore: UInt64, positions: [Key: Position])] = []

    /// The most sends remembered one by one.
    public static var limit: Int { 4_096 }

    /// No positions pending.
    public init() {}

    /// How many sends are waiting.
    public var count: Int { waiting.count }

    /// Notes where the input stands now that everything read up to `positions` was sent; `madeBefore` is later
    /// than the ingest time of every event of those sends.
    public mutating func record(_ positions: [Key: Position], madeBefore: UInt64) {
        guard !positions.isEmpty else { return }
        if waiting.count >= Self.limit {
            waiting[waiting.count - 1].madeBefore = madeBefore
            waiting[waiting.count - 1].positions.merge(positions) { $1 }
        } else {
            waiting.append((madeBefore, positions))
        }
    }

    /// Removes and returns the positions whose events were all ingested before `finishedBefore`, the latest for
    /// each key.
    public mutating func takeFinished(before finishedBefore: UInt64) -> [Key: Position] {
        var finished: [Key: Position] = [:]
        var count = 0
        for entry in waiting {
            guard entry.madeBefore < finishedBefore else { break }
            finished.merge(entry.positions) { $1 }
            count += 1
        }
        waiting.removeFirst(count)
        return finished
    }

    /// The latest `madeBefore` among the sends waiting with a position of a key `matches` picks; `nil` when none
    /// waits: those keys' events are finished once ``SourceContext/finishedBefore`` passes it.
    public func lastMadeBefore(where matches: (Key) -> Bool) -> UInt64? {
        waiting.last { $0.positions.keys.contains(where: matches) }?.madeBefore
    }

    /// Forgets the positions of the keys `isGone` picks (a Kafka partition given up to another consumer).
    public mutating func forget(where isGone: (Key) -> Bool) {
        for index in waiting.indices { waiting[index].positions = waiting[index].positions.filter { !isGone($0.key) } }
        waiting.removeAll { $0.positions.isEmpty }
    }
}
