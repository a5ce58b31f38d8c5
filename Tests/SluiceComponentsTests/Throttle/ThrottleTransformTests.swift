import SluiceCore
import Testing

struct ThrottleTransformTests {
    @Test(arguments: [false, true]) func eachKeyGetsMaxEventsPerWindow(asText: Bool) throws {
        var throttle = try TransformHarness.make("throttle", "{key: .device, max_events: 3, window_secs: 1}")
        let events: [JSONValue] = (0..<20).map { ["device": .string("d\($0 % 2)"), "n": .int(Int64($0))] }
        // Window [1000, 2000): 3 of each device pass, across two batches.
        let (first, firstPass) = TransformHarness.process(&throttle, Array(events[0..<5]), at: 1_000, asText: asText)
        let (second, secondPass) = TransformHarness.process(&throttle, Array(events[5..<20]), at: 1_999, asText: asText)
        #expect((first + second).map { $0["n"] } == [0, 1, 2, 3, 4, 5].map { JSONValue.int($0) })
        #expect(firstPass.discards[.throttled] + secondPass.discards[.throttled] == 14)
        // The next window starts with a fresh budget.
        let (third, _) = TransformHarness.process(&throttle, Array(events[0..<8]), at: 2_000, asText: asText)
        #expect(third.map { $0["n"] } == [0, 1, 2, 3, 4, 5].map { JSONValue.int($0) })
    }

    @Test(arguments: [false, true]) func withoutAKeyOneBudgetServesAll(asText: Bool) throws {
        var throttle = try TransformHarness.make("throttle", "{max_events: 10, window_secs: 60}")
        let events: [JSONValue] = (0..<1000).map { ["device": .string("d\($0 % 7)")] }
        let (kept, pass) = TransformHarness.process(&throttle, events, at: 120_000, asText: asText)
        #expect(kept.count == 10)
        #expect(pass.discards[.throttled] == 990)
    }
}
