import SluiceSync
import Synchronization
import Testing

@testable import SluiceSources

/// The waits here are long and their bounds loose on purpose: under ThreadSanitizer on the CI machine the two tests
/// that wait for a take once both took 37 s, ending in the same instant, against a bound of 30 s (the whole process
/// was held up; why was not found: the end-to-end tests beside them run off Swift's pool). A wait ended by its time
/// instead of by the take still lasts ten minutes, twice the bound.
struct BatchHandOffTests {
    private static let longWaitNanos: UInt64 = 600_000_000_000
    private static let wokenWellBefore = Duration.seconds(300)

    @Test func batchesComeOutInOrderAndTheEndAfterThem() async {
        let handOff = BatchHandOff<Int>(capacity: 2) {}
        handOff.put(1)
        handOff.put(2)
        handOff.finish()
        #expect(await handOff.next() == 1)
        #expect(await handOff.next() == 2)
        #expect(await handOff.next() == nil)
    }

    @Test func aWaitingTaskGetsABatchPutFromAnotherThread() async throws {
        let handOff = BatchHandOff<Int>(capacity: 2) {}
        try ServiceThread.start { handOff.put(7) }
        #expect(await handOff.next() == 7)
    }

    @Test func takingFromAFullHandOffTellsTheProducerThereIsRoom() async {
        let taken = Atomic(0)
        let handOff = BatchHandOff<Int>(capacity: 2) { taken.add(1, ordering: .relaxed) }
        handOff.put(1)
        #expect(!handOff.isFull)
        handOff.put(2)
        #expect(handOff.isFull)
        _ = await handOff.next()
        #expect(taken.load(ordering: .relaxed) == 1, "room was made in a full hand-off")
        #expect(!handOff.isFull)
        _ = await handOff.next()
        #expect(taken.load(ordering: .relaxed) == 1, "taking from one that was not full says nothing")
    }

    @Test func waitingForRoomReturnsAtOnceWhenThereIsRoomAndAfterTheTimeWhenThereIsNone() {
        let handOff = BatchHandOff<Int>(capacity: 2) {}
        handOff.put(1)
        #expect(handOff.waitForRoom(upToNanos: Self.longWaitNanos), "one of two places is taken")
        handOff.put(2)
        Self.expectAWaitThatLastsItsTime(handOff)
    }

    /// The poll thread waits for room (instead of pausing its partitions) and goes on as soon as the task takes a
    /// batch, long before its time is up.
    @Test func aThreadWaitingForRoomGoesOnWhenTheTaskTakesABatch() async throws {
        let handOff = BatchHandOff<Int>(capacity: 2) {}
        handOff.put(1)
        handOff.put(2)
        let start = ContinuousClock.now
        async let hadRoom = Self.onAThread { handOff.waitForRoom(upToNanos: Self.longWaitNanos) }
        try await Self.untilTheThreadWaits(handOff)
        #expect(await handOff.next() == 1)
        #expect(try await hadRoom)
        #expect(ContinuousClock.now - start < Self.wokenWellBefore, "woken by the take, not by the time")
        // No wake-up is left over: the next wait on a full hand-off lasts its time.
        handOff.put(3)
        Self.expectAWaitThatLastsItsTime(handOff)
    }

    /// The source stops: a wait ends at once, and no later one waits.
    @Test func endingWaitsEndsTheWaitOfAFullHandOffAndEveryLaterOne() async throws {
        let handOff = BatchHandOff<Int>(capacity: 1) {}
        handOff.put(1)
        let start = ContinuousClock.now
        async let hadRoom = Self.onAThread { handOff.waitForRoom(upToNanos: Self.longWaitNanos) }
        try await Self.untilTheThreadWaits(handOff)
        handOff.endWaits()
        #expect(try await hadRoom == false, "still full")
        #expect(!handOff.waitForRoom(upToNanos: Self.longWaitNanos))
        #expect(ContinuousClock.now - start < Self.wokenWellBefore)
    }

    private static func expectAWaitThatLastsItsTime(_ handOff: BatchHandOff<Int>) {
        let start = ContinuousClock.now
        #expect(!handOff.waitForRoom(upToNanos: 20_000_000))
        #expect(ContinuousClock.now - start >= .milliseconds(20))
    }

    /// Polls, as the hand-off tells no one that its thread waits; sleeping between looks rather than yielding, so
    /// that the poll does not hold a thread of Swift's pool (two of these spinning held both on two cores).
    private static func untilTheThreadWaits(_ handOff: BatchHandOff<Int>) async throws {
        let deadline = ContinuousClock.now + Self.wokenWellBefore
        while !handOff.threadWaits, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        try #require(handOff.threadWaits)
    }

    /// What `body` returns, run on a thread of its own (as the poll thread).
    private static func onAThread(_ body: @escaping @Sendable () -> Bool) async throws -> Bool {
        try await withCheckedThrowingContinuation { result in
            do {
                try ServiceThread.start { result.resume(returning: body()) }
            } catch {
                result.resume(throwing: error)
            }
        }
    }
}
