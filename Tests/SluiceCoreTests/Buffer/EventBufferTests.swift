import SluiceCore
import Testing

struct EventBufferTests {
    static func events(_ range: Range<Int>) -> [Event] { range.map { Event(.int(Int64($0))) } }
    static func values(_ events: [Event]) -> [Int] {
        events.map { if case .int(let n) = $0.value { Int(n) } else { -1 } }
    }

    func makeBuffer(_ policy: BufferPolicy, producers: Int = 1, maxBatch: Int = 1024) -> (EventBuffer, ComponentMetrics)
    {
        let metrics = ComponentMetrics(id: "sink", kind: .sink, typeName: "test")
        return (EventBuffer(policy: policy, producers: producers, owner: metrics, maxBatch: maxBatch), metrics)
    }

    /// Drains the buffer after its producers finished.
    func drain(_ buffer: EventBuffer) async -> [Int] {
        var taken: [Int] = []
        while let batch = await buffer.next() { taken += Self.values(batch) }
        return taken
    }

    @Test func dropNewestKeepsTheOldestAndCountsTheRest() async {
        let (buffer, metrics) = makeBuffer(.dropNewest(maxEvents: 10))
        await buffer.send(Self.events(0..<6))
        await buffer.send(Self.events(6..<15))
        buffer.finishProducer()
        #expect(buffer.snapshot().highWaterEvents == 10)
        #expect(await drain(buffer) == Array(0..<10))
        let snapshot = metrics.snapshot()
        #expect(snapshot.received == 15)
        #expect(snapshot.discarded[.bufferFull] == 5)
    }

    @Test func dropOldestKeepsTheNewestAndCountsTheRest() async {
        let (buffer, metrics) = makeBuffer(.dropOldest(maxEvents: 10))
        await buffer.send(Self.events(0..<6))
        await buffer.send(Self.events(6..<15))
        await buffer.send(Self.events(15..<40))
        buffer.finishProducer()
        #expect(await drain(buffer) == Array(30..<40))
        #expect(metrics.snapshot().discarded[.bufferFull] == 30)
        #expect(metrics.snapshot().received == 40)
    }

    @Test func unboundedKeepsEverything() async {
        let (buffer, metrics) = makeBuffer(.unbounded)
        for start in stride(from: 0, to: 5000, by: 100) { await buffer.send(Self.events(start..<start + 100)) }
        buffer.finishProducer()
        #expect(buffer.snapshot().events == 5000)
        #expect(await drain(buffer) == Array(0..<5000))
        #expect(metrics.snapshot().discarded.total == 0)
    }

    @Test func theConsumerTakesAtMostOneBatchLimitAcrossSmallBatches() async {
        let (buffer, _) = makeBuffer(.unbounded, maxBatch: 8)
        for value in 0..<20 { await buffer.send(Self.events(value..<value + 1)) }
        buffer.finishProducer()
        #expect(await buffer.next()?.count == 8)
        #expect(await buffer.next()?.count == 8)
        #expect(await buffer.next()?.count == 4)
        #expect(await buffer.next() == nil)
    }

    /// Small batches are joined, but never with a large one after them, which is handed on as it was sent: joining
    /// it would copy each of its events.
    @Test func smallBatchesAreJoinedUpToALargeOneWhichGoesOnWhole() async {
        let (buffer, _) = makeBuffer(.unbounded, maxBatch: 1000)
        await buffer.send(Self.events(0..<50))
        await buffer.send(Self.events(50..<60))
        await buffer.send(Self.events(60..<960))
        await buffer.send(Self.events(960..<970))
        buffer.finishProducer()
        #expect(await buffer.next().map(Self.values) == Array(0..<60))
        #expect(await buffer.next().map(Self.values) == Array(60..<960))
        #expect(await buffer.next().map(Self.values) == Array(960..<970))
        #expect(await buffer.next() == nil)
    }

    @Test func blockNeverExceedsCapacityAndLosesNothing() async {
        let (buffer, metrics) = makeBuffer(.block(maxEvents: 50), producers: 2, maxBatch: 7)
        async let first: Void = {
            for start in stride(from: 0, to: 10_000, by: 37) {
                await buffer.send(Self.events(start..<min(10_000, start + 37)))
            }
            buffer.finishProducer()
        }()
        async let second: Void = {
            for start in stride(from: 10_000, to: 20_000, by: 100) {
                await buffer.send(Self.events(start..<start + 100))
            }
            buffer.finishProducer()
        }()
        var taken: [Int] = []
        while let batch = await buffer.next() {
            #expect(batch.count <= 7)
            taken += Self.values(batch)
        }
        _ = await (first, second)
        #expect(taken.count == 20_000)
        // Each producer's events stay in order.
        #expect(taken.filter { $0 < 10_000 } == Array(0..<10_000))
        #expect(taken.filter { $0 >= 10_000 } == Array(10_000..<20_000))
        let snapshot = buffer.snapshot()
        #expect(snapshot.highWaterEvents <= 50)
        #expect(metrics.snapshot().received == 20_000)
        #expect(metrics.snapshot().discarded.total == 0)
    }

    /// A `block` buffer of `capacity` holding `buffered`, and a producer parked on it with `waiting`, which then
    /// finishes; by default a full buffer of four (0 to 3) and 4 and 5 waiting.
    func parkedProducer(
        capacity: Int = 4, buffered: Range<Int> = 0..<4, waiting: Range<Int> = 4..<6,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> (EventBuffer, ComponentMetrics, Task<Void, Never>) {
        let (buffer, metrics) = makeBuffer(.block(maxEvents: capacity))
        await buffer.send(Self.events(buffered))
        let producer = Task {
            await buffer.send(Self.events(waiting))
            buffer.finishProducer()
        }
        // Wait (bounded) until the producer is parked.
        for _ in 0..<100_000 {
            if buffer.snapshot().producersBlocked > 0 { break }
            await Task.yield()
        }
        #expect(buffer.snapshot().producersBlocked == 1, sourceLocation: sourceLocation)
        return (buffer, metrics, producer)
    }

    @Test func aBlockedProducerWaitsUntilTheConsumerMakesRoom() async {
        let (buffer, _, producer) = await parkedProducer()
        // The producer cannot finish until room is made, so the next batch is exactly the first four.
        #expect(Self.values(await buffer.next() ?? []) == [0, 1, 2, 3])
        await producer.value
        #expect(Self.values(await buffer.next() ?? []) == [4, 5])
        #expect(await buffer.next() == nil)
        #expect(buffer.snapshot().blockedSecsTotal > 0)
    }

    /// A batch that fits the capacity goes into a `block` buffer whole: its producer waits for room for all of it
    /// rather than putting in a part, and the consumer gets each batch as it was sent (a split one would have been
    /// gathered into a new array, every event copied).
    @Test func aBatchThatFitsGoesInWholeAndComesOutAsSent() async {
        let (buffer, _, producer) = await parkedProducer(capacity: 10, buffered: 0..<6, waiting: 6..<12)
        // Four would fit, but none went in.
        #expect(buffer.snapshot().events == 6)
        #expect(Self.values(await buffer.next() ?? []) == Array(0..<6))
        await producer.value
        #expect(Self.values(await buffer.next() ?? []) == Array(6..<12))
        #expect(await buffer.next() == nil)
    }

    /// A batch larger than the capacity cannot go in whole: it goes in part by part, in order, within it.
    @Test func aBatchLargerThanTheCapacityGoesInPartByPart() async {
        let (buffer, _) = makeBuffer(.block(maxEvents: 10))
        let producer = Task {
            await buffer.send(Self.events(0..<25))
            buffer.finishProducer()
        }
        var taken: [[Int]] = []
        while let batch = await buffer.next() {
            #expect(buffer.snapshot().highWaterEvents <= 10)
            taken.append(Self.values(batch))
        }
        await producer.value
        #expect(Array(taken.joined()) == Array(0..<25))
        #expect(taken.allSatisfy { $0.count <= 10 })
    }

    /// A producer with more left than the capacity parks only while the buffer is full. It used to wait for room
    /// for all it had left, which a buffer smaller than the batch never has: when the consumer emptied the buffer
    /// between the producer's putting in a part and its parking, nothing woke it again, and the pipeline stood
    /// still (a `kafka` source's 1,000-event batches into `buffer: {max_events: 100}` did so within seconds).
    ///
    /// A stall is recognised by its state, not by a wait's length: a producer parked on an empty buffer is the lost
    /// wake-up, which a correct buffer never shows (a producer parks only while events are queued, and the read
    /// that empties the queue releases it under the same lock). A consumer that is merely slow, as under a
    /// sanitizer with the whole suite on two cores, waits again.
    @Test func aProducerWithMoreThanTheCapacityLeftIsNeverLeftWaitingOnAnEmptyBuffer() async {
        var stalls = 0
        var starved = 0
        for _ in 0..<300 {
            let (buffer, _) = makeBuffer(.block(maxEvents: 10))
            // The consumer waits first, so that the producer's first part wakes it on the other thread at once.
            let consumer = Task {
                var taken = 0
                var stalled = false
                var quietWaits = 0
                reading: while true {
                    switch await buffer.next(deadlineMillis: WallClock.nowMillis() + 1_000) {
                    case .events(let batch):
                        taken += batch.count
                        quietWaits = 0
                    case .finished: break reading
                    case .timedOut:
                        let snapshot = buffer.snapshot()
                        let stuck = snapshot.producersBlocked > 0 && snapshot.events == 0
                        quietWaits += 1
                        guard stuck || quietWaits == 120 else { continue }
                        // Stuck (or nothing at all for two minutes): note it, and let the producer go so that
                        // the test ends.
                        stalled = stuck
                        buffer.change(to: .unbounded)
                    }
                }
                return (taken, stalled, quietWaits)
            }
            for _ in 0..<20 { await Task.yield() }
            await buffer.send(Self.events(0..<25))
            buffer.finishProducer()
            let (taken, stalled, quietWaits) = await consumer.value
            if stalled { stalls += 1 }
            if quietWaits >= 120 { starved += 1 }
            #expect(taken == 25)
            if stalls > 0 || starved > 0 { break }
        }
        #expect(stalls == 0, "a producer was left parked on an empty buffer")
        #expect(starved == 0, "a round made no progress for two minutes without the lost wake-up's state")
    }

    /// A reload's new policy applies to what is buffered: a smaller `drop_oldest` keeps the newest and counts the
    /// rest, and from then on arrivals follow it.
    @Test func anotherPolicyAppliesToWhatIsBufferedAndWhatComes() async {
        let (buffer, metrics) = makeBuffer(.block(maxEvents: 10))
        await buffer.send(Self.events(0..<8))
        buffer.change(to: .dropOldest(maxEvents: 5))
        #expect(buffer.snapshot().events == 5)
        await buffer.send(Self.events(8..<10))
        buffer.finishProducer()
        #expect(await drain(buffer) == [5, 6, 7, 8, 9])
        let snapshot = metrics.snapshot()
        #expect(snapshot.received == 10)
        #expect(snapshot.discarded[.bufferFull] == 5)
        #expect(snapshot.buffer?.whenFull == "drop_oldest")
        #expect(snapshot.buffer?.maxEvents == 5)
    }

    /// A producer parked on a full `block` buffer goes on once a larger capacity makes room, without a read.
    @Test func aLargerCapacityReleasesAParkedProducer() async {
        let (buffer, metrics, producer) = await parkedProducer()
        buffer.change(to: .block(maxEvents: 100))
        await producer.value
        #expect(buffer.snapshot().events == 6)
        #expect(await drain(buffer) == Array(0..<6))
        #expect(metrics.snapshot().discarded.total == 0)
    }

    /// Turning into `latest_per_key` keys what is buffered, in order, and counts what the newer events replace.
    @Test func becomingLatestPerKeyKeysWhatIsBuffered() async throws {
        let (buffer, metrics) = makeBuffer(.block(maxEvents: 10))
        func reading(_ device: String, _ seq: Int) -> Event {
            Event(["device": .string(device), "seq": .int(Int64(seq))])
        }
        await buffer.send([reading("a", 1), reading("b", 1), reading("a", 2)])
        buffer.change(to: .latestPerKey(maxEvents: 10, key: try Expression(".device")))
        await buffer.send([reading("b", 2), reading("c", 1)])
        buffer.change(to: .unbounded)
        await buffer.send([reading("c", 2)])
        buffer.finishProducer()
        var taken: [JSONValue] = []
        while let batch = await buffer.next() { taken += batch.map(\.value) }
        #expect(
            taken == [
                ["device": "a", "seq": 2], ["device": "b", "seq": 2], ["device": "c", "seq": 1],
                ["device": "c", "seq": 2],
            ])
        let snapshot = metrics.snapshot()
        #expect(snapshot.received == 6)
        #expect(snapshot.discarded[.superseded] == 2)
        #expect(snapshot.received == taken.count + snapshot.discarded.total)
    }

    @Test func closingDiscardsWhatIsBufferedAndWhatArrivesAndReleasesProducers() async {
        let (buffer, metrics) = makeBuffer(.block(maxEvents: 3))
        await buffer.send(Self.events(0..<3))
        let producer = Task { await buffer.send(Self.events(3..<8)) }
        buffer.close()
        await producer.value
        let snapshot = metrics.snapshot()
        #expect(snapshot.received == 8)
        #expect(snapshot.discarded[.error] == 8)
    }
}

struct BufferPolicyTests {
    @Test func wordsAndCapacities() {
        #expect(BufferPolicy.block(maxEvents: 5).whenFull == "block")
        #expect(BufferPolicy.dropNewest(maxEvents: 5).whenFull == "drop_newest")
        #expect(BufferPolicy.dropOldest(maxEvents: 5).whenFull == "drop_oldest")
        #expect(BufferPolicy.unbounded.whenFull == "unbounded")
        #expect(BufferPolicy.unbounded.maxEvents == nil)
        #expect(BufferPolicy.default == .block(maxEvents: 8000))
    }
}

/// The consumer's wait with a deadline, which stateful transforms use to act when no event arrives.
struct EventBufferDeadlineTests {
    func makeBuffer() -> EventBuffer {
        EventBuffer(
            policy: .default, producers: 1, owner: ComponentMetrics(id: "t", kind: .transform, typeName: "test"))
    }

    // The limit catches a timer that never fires; how soon after the deadline the wait resumes is not this test's
    // business: it needs a cooperative thread, and the end-to-end tests in the same process block both of them for
    // tens of seconds under the thread sanitizer.
    @Test(.timeLimit(.minutes(3))) func aWaitEndsAtItsDeadlineWhenNothingArrives() async {
        let buffer = makeBuffer()
        let start = WallClock.nowMillis()
        guard case .timedOut = await buffer.next(deadlineMillis: start + 50) else {
            Issue.record("expected a timeout")
            return
        }
        let waited = WallClock.nowMillis() - start
        #expect(waited >= 49, "ended \(waited) ms after it began, before its deadline")
        // A deadline already past returns at once.
        guard case .timedOut = await buffer.next(deadlineMillis: start) else {
            Issue.record("expected a timeout")
            return
        }
    }

    // The deadline is far beyond anything a starved cooperative pool delays the producer by (63 s under TSan).
    @Test(.timeLimit(.minutes(5))) func eventsThatArriveFirstEndTheWaitAndAStaleTimerEndsNoLaterWait() async {
        let buffer = makeBuffer()
        let producer = Task {
            await buffer.send([Event(.int(1))])
        }
        // The deadline is far away: the events end the wait.
        guard case .events(let batch) = await buffer.next(deadlineMillis: WallClock.nowMillis() + 3_600_000) else {
            Issue.record("expected the events")
            return
        }
        #expect(batch.count == 1)
        await producer.value
        // A short wait's timer fires while a later wait (without a deadline) is parked: it must not end that one.
        _ = await buffer.next(deadlineMillis: WallClock.nowMillis() + 20)
        let later = Task { await buffer.next(deadlineMillis: nil) }
        try? await Task.sleep(for: .milliseconds(100))
        await buffer.send([Event(.int(2))])
        buffer.finishProducer()
        guard case .events(let second) = await later.value else {
            Issue.record("the later wait ended without its events")
            return
        }
        #expect(second.count == 1)
        guard case .finished = await buffer.next(deadlineMillis: WallClock.nowMillis() + 3_600_000) else {
            Issue.record("expected the end")
            return
        }
    }
}

/// A `latest_per_key` buffer keeps each key's newest event in the place its key first took.
struct LatestPerKeyBufferTests {
    @Test func newerEventsReplaceOlderOnesOfTheirKeyInPlace() async throws {
        let metrics = ComponentMetrics(id: "live", kind: .sink, typeName: "test")
        let key = try Expression(".device")
        let buffer = EventBuffer(
            policy: .latestPerKey(maxEvents: 3, key: key), producers: 1, owner: metrics)
        func reading(_ device: String, _ seq: Int) -> Event {
            Event(["device": .string(device), "seq": .int(Int64(seq))])
        }
        await buffer.send([reading("a", 1), reading("b", 1), reading("a", 2)])
        await buffer.send([reading("c", 1), reading("b", 2), reading("a", 3)])
        // A fourth key: the oldest (a) is dropped to make room.
        await buffer.send([reading("d", 1)])
        buffer.finishProducer()
        var taken: [JSONValue] = []
        while let batch = await buffer.next() { taken += batch.map(\.value) }
        #expect(taken == [["device": "b", "seq": 2], ["device": "c", "seq": 1], ["device": "d", "seq": 1]])
        let snapshot = metrics.snapshot()
        #expect(snapshot.received == 7)
        #expect(snapshot.discarded[.superseded] == 3)
        #expect(snapshot.discarded[.bufferFull] == 1)
        #expect(snapshot.received == taken.count + snapshot.discarded.total)
        #expect(snapshot.buffer?.whenFull == "latest_per_key")
    }
}
