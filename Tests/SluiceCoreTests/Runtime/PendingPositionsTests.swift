import Testing

@testable import SluiceCore

struct PendingPositionsTests {
    @Test func onlyPositionsWhoseEventsAreAllFinishedAreTakenTheLatestPerKey() {
        var pending = PendingPositions<String, Int>()
        pending.record(["a": 10], madeBefore: 100)
        pending.record(["a": 20, "b": 5], madeBefore: 200)
        pending.record(["a": 30], madeBefore: 300)
        #expect(pending.takeFinished(before: 100).isEmpty, "made at 100: not finished before 100")
        #expect(pending.takeFinished(before: 201) == ["a": 20, "b": 5])
        #expect(pending.count == 1)
        #expect(pending.takeFinished(before: .max) == ["a": 30])
        #expect(pending.count == 0)
    }

    @Test func aSendThatIsNotFinishedHoldsBackLaterOnesOfEveryKey() {
        var pending = PendingPositions<String, Int>()
        pending.record(["a": 1], madeBefore: 100)
        pending.record(["b": 1], madeBefore: 50)
        #expect(pending.takeFinished(before: 60).isEmpty, "in order: the first send is not finished")
    }

    @Test func pastTheLimitSendsMergeIntoTheLastAndNeverCommitEarly() {
        var pending = PendingPositions<String, Int>()
        let limit = PendingPositions<String, Int>.limit
        for index in 0..<(limit + 10) { pending.record(["a": index], madeBefore: UInt64(index + 1)) }
        #expect(pending.count == limit)
        // The last entry now waits for the latest time of those merged into it.
        #expect(pending.takeFinished(before: UInt64(limit)) == ["a": limit - 2])
        #expect(pending.takeFinished(before: UInt64(limit + 9)).isEmpty)
        #expect(pending.takeFinished(before: UInt64(limit + 11)) == ["a": limit + 9])
    }

    @Test func forgottenKeysAreNeverTaken() {
        var pending = PendingPositions<String, Int>()
        pending.record(["a": 1, "b": 1], madeBefore: 10)
        pending.record(["b": 2], madeBefore: 20)
        pending.forget { $0 == "b" }
        #expect(pending.count == 1)
        #expect(pending.takeFinished(before: .max) == ["a": 1])
    }
}
