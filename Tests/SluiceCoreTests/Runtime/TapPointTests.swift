import SluiceSync
import SluiceTesting
import Synchronization
import Testing

@testable import SluiceCore

struct TapPointTests {
    /// What a watcher was given: each delivery's events (as text) and whether it was the last.
    final class Deliveries: Sendable {
        let received = Mutex<[(events: [String], finished: Bool)]>([])
        func deliver(_ events: [[UInt8]], _ finished: Bool) {
            received.locked { $0.append((events.map { String(decoding: $0, as: UTF8.self) }, finished)) }
        }
        var all: [(events: [String], finished: Bool)] { received.locked { $0 } }
    }

    static func batch(_ range: Range<Int>) -> [Event] { range.map { Event(.int(Int64($0))) } }

    @Test func withNoWatcherNothingIsSampled() {
        let tap = TapPoint()
        #expect(!tap.isWatched)
        tap.offer(Self.batch(0..<10))
        let deliveries = Deliveries()
        let id = tap.watch(output: nil, ratePerSec: 100, limit: 10, deliver: deliveries.deliver)
        #expect(tap.isWatched)
        tap.unwatch(id)
        tap.offer(Self.batch(0..<10))
        #expect(!tap.isWatched)
        #expect(deliveries.all.isEmpty)
    }

    @Test func theLimitEndsTheWatchAndSaysSo() {
        let tap = TapPoint()
        let deliveries = Deliveries()
        _ = tap.watch(output: nil, ratePerSec: 1000, limit: 3, deliver: deliveries.deliver)
        tap.offer(Self.batch(0..<2))
        tap.offer(Self.batch(10..<20))
        tap.offer(Self.batch(20..<30))
        #expect(deliveries.all.map(\.events) == [["0", "1"], ["10"]])
        #expect(deliveries.all.map(\.finished) == [false, true])
        #expect(!tap.isWatched)
    }

    @Test func theRateCapsASecondsSampleAndSpreadsItOverTheBatch() {
        let tap = TapPoint()
        let deliveries = Deliveries()
        _ = tap.watch(output: nil, ratePerSec: 10, limit: 1000, deliver: deliveries.deliver)
        tap.offer(Self.batch(0..<100))
        // At once again: less than a token has come back since.
        tap.offer(Self.batch(100..<200))
        #expect(deliveries.all.count == 1)
        #expect(deliveries.all.first?.events == ["0", "10", "20", "30", "40", "50", "60", "70", "80", "90"])
    }

    @Test func aWatcherOfANamedOutputSeesOnlyThatOutput() {
        let tap = TapPoint()
        let hot = Deliveries()
        let any = Deliveries()
        _ = tap.watch(output: "hot", ratePerSec: 100, limit: 100, deliver: hot.deliver)
        _ = tap.watch(output: nil, ratePerSec: 100, limit: 100, deliver: any.deliver)
        tap.offer(Self.batch(0..<1), output: "cold")
        tap.offer(Self.batch(1..<2), output: "hot")
        #expect(hot.all.map(\.events) == [["1"]])
        #expect(any.all.map(\.events) == [["0"], ["1"]])
    }

    /// The taps sit where events leave: a source's edge, a transform fused into another's task, and what a sink
    /// takes to write.
    @Test func aRunningPipelineOffersWhatLeavesEachComponent() async throws {
        let result = PipelineLoader(catalog: TestCatalog.catalog, environment: [:]).load(
            """
            sources:
              numbers: {type: counter, count: 250}
            transforms:
              first: {type: pass, inputs: [numbers]}
              second: {type: pass, inputs: [first]}
            sinks:
              out: {type: collect, inputs: [second], into: tap-point-test}
            """)
        let definition = try #require(result.definition)
        let runner = PipelineRunner(definition: definition, log: Logger { _ in })
        var seen: [String: Deliveries] = [:]
        for metrics in runner.metrics {
            let deliveries = Deliveries()
            _ = metrics.tap.watch(output: nil, ratePerSec: 1_000_000, limit: 1000, deliver: deliveries.deliver)
            seen[metrics.id] = deliveries
        }
        _ = await runner.run(reporter: nil)
        _ = CollectedEvents.take("tap-point-test")
        for id in ["numbers", "first", "second", "out"] {
            let events = seen[id]?.all.flatMap(\.events) ?? []
            #expect(events == (0..<250).map(String.init), "\(id)")
        }
    }
}
