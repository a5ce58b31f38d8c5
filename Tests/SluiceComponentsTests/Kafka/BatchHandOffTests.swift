import SluiceSync
import Synchronization
import Testing

@testable import SluiceSources

struct BatchHandOffTests {
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
}
