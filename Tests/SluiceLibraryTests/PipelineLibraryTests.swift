import Dispatch
import Sluice
import Synchronization
import Testing

/// The library as a program uses it: `import Sluice` and nothing else of the package.
struct PipelineLibraryTests {
    static let hotReadings = """
        sources:
          readings: {type: host}
        transforms:
          hot: {type: filter, inputs: [readings], condition: .temperature > 30}
          fahrenheit: {type: map, inputs: [hot], set: {temperature_f: .temperature * 9 / 5 + 32}}
        sinks:
          alerts: {type: host, inputs: [fahrenheit]}
        """

    static func reading(_ index: Int) -> Event {
        Event(["seq": .int(Int64(index)), "temperature": .double(Double(index % 50))])
    }

    func component(_ id: String, in report: MetricsReport) throws -> ComponentSnapshot {
        try #require(report.components.first { $0.id == id })
    }

    @Test func eventsFromAnAsyncStreamComeOutOfAHostSink() async throws {
        let pipeline = try Pipeline(yaml: Self.hotReadings)
        let (readings, feed) = AsyncStream.makeStream(of: Event.self)
        for temperature in [25.5, 31.0, 40.25] { feed.yield(Event(["temperature": .double(temperature)])) }
        feed.finish()
        var alerts: [String] = []
        let result = try await pipeline.run(inputs: ["readings": .events(readings)]) { run in
            for await alert in run.output("alerts") { alerts.append(alert.jsonText) }
        }
        #expect(
            alerts == [#"{"temperature":31.0,"temperature_f":87.8}"#, #"{"temperature":40.25,"temperature_f":104.45}"#])
        #expect(result.succeeded)
        let hot = try component("hot", in: result.report)
        #expect((hot.received, hot.sent, hot.discarded[.filtered]) == (3, 2, 1))
        let sink = try component("alerts", in: result.report)
        #expect((sink.received, sink.sent, sink.discarded.total) == (2, 2, 0))
    }

    @Test func batchesInAndOutKeepEveryEventInOrder() async throws {
        let pipeline = try Pipeline(
            yaml: """
                sources: {in: {type: host}}
                transforms: {tag: {type: map, inputs: [in], set: {even: .seq % 2 == 0}}}
                sinks: {out: {type: host, inputs: [tag]}}
                """)
        let total = 200_000
        let batches = AsyncStream<[Event]> { continuation in
            for start in stride(from: 0, to: total, by: 1000) {
                continuation.yield((start..<start + 1000).map(Self.reading))
            }
            continuation.finish()
        }
        var next = 0
        var ordered = true
        let result = try await pipeline.run(inputs: ["in": .batches(batches)]) { run in
            for await batch in run.output("out").batches {
                for event in batch {
                    ordered =
                        ordered
                        && event.value
                            == .object(
                                [
                                    "seq": .int(Int64(next)), "temperature": .double(Double(next % 50)),
                                    "even": .bool(next % 2 == 0),
                                ])
                    next += 1
                }
            }
        }
        #expect(next == total)
        #expect(ordered)
        let source = try component("in", in: result.report)
        let sink = try component("out", in: result.report)
        #expect((source.received, source.sent, sink.received, sink.sent) == (total, total, total, total))
    }

    /// A host that reads slowly holds its input back through a `block` buffer: memory stays bounded, and what the
    /// host never reads is discarded and counted when it stops.
    @Test func aSlowReaderHoldsTheInputBackAndStoppingAccountsForEverything() async throws {
        let pipeline = try Pipeline(
            yaml: """
                sources: {in: {type: host}}
                sinks: {out: {type: host, inputs: [in], buffer: {max_events: 10, when_full: block}}}
                """)
        let pulled = Counter()
        let endless = EndlessReadings(pulled: pulled)
        var blockedWhileHoldingOne = false
        let result = try await pipeline.run(inputs: ["in": .events(endless)]) { run in
            var iterator = run.output("out").makeAsyncIterator()
            _ = await iterator.next()
            // The source parks on the full buffer: look until it has (bounded, far beyond what a starved pool
            // delays it by: see `FirstOf`), then at what it pulled.
            let deadline = ContinuousClock.now + .seconds(300)
            while ContinuousClock.now < deadline {
                let buffer = run.report().components.first { $0.id == "out" }?.buffer
                if buffer?.producersBlocked == 1 {
                    blockedWhileHoldingOne = true
                    break
                }
                try await Task.sleep(for: .milliseconds(2))
            }
        }
        #expect(blockedWhileHoldingOne)
        // At most one taken batch (the buffer's ten) and one event waiting to go in, then the ten it holds.
        #expect(pulled.value <= 21, "pulled \(pulled.value)")
        let source = try component("in", in: result.report)
        let sink = try component("out", in: result.report)
        #expect(source.received == pulled.value || source.received == pulled.value - 1)
        #expect(sink.received == source.sent)
        #expect(sink.sent + sink.discarded[.error] == sink.received)
        #expect(sink.discarded[.error] >= 1, "what the host did not read is counted")
    }

    /// A body that leaves two outputs unread lets both go: the run ends, and what each held is counted.
    @Test func everyOutputTheBodyLeavesIsLetGo() async throws {
        let pipeline = try Pipeline(
            yaml: """
                sources: {in: {type: host}}
                sinks:
                  left: {type: host, inputs: [in]}
                  right: {type: host, inputs: [in]}
                """)
        // An output left holding its sink would keep the run from ever ending: wait a bounded time for it.
        let ended = await FirstOf<PipelineResult>.result(orAfterSeconds: 300) {
            try? await pipeline.run(inputs: ["in": .events(EndlessReadings(pulled: Counter()))]) { run in
                var left = run.output("left").makeAsyncIterator()
                _ = await left.next()
            }
        }
        let result = try #require(ended, "the run did not end")
        for id in ["left", "right"] {
            let sink = try component(id, in: result.report)
            #expect(sink.sent + sink.discarded[.error] == sink.received, "\(id)")
        }
    }

    @Test func cancellingTheRunningTaskStopsTheSourcesAndDrains() async throws {
        let pipeline = try Pipeline(
            yaml: """
                sources: {in: {type: host}}
                sinks: {out: {type: blackhole, inputs: [in]}}
                """)
        let (tenThousand, signal) = AsyncStream.makeStream(of: Void.self)
        let pulled = Counter(signalling: signal, at: 10_000)
        let running = Task {
            try await pipeline.run(inputs: ["in": .events(EndlessReadings(pulled: pulled))])
        }
        // Should the run end first, the wait ends with it.
        Task {
            _ = try? await running.value
            signal.finish()
        }
        for await _ in tenThousand { break }
        running.cancel()
        let result = try await running.value
        #expect(result.succeeded)
        let source = try component("in", in: result.report)
        let sink = try component("out", in: result.report)
        #expect(source.received >= 10_000)
        #expect(sink.received == source.sent)
        #expect(sink.sent == sink.received, "what was sent drained")
    }

    @Test func aPipelineBuiltInCodeRunsAsItsYAMLDoes() async throws {
        var builder = PipelineBuilder()
        builder.source("readings", type: "host")
        builder.transform("hot", type: "filter", inputs: ["readings"], options: ["condition": ".temperature > 30"])
        builder.sink("alerts", type: "host", inputs: ["hot"], buffer: ["max_events": 100, "when_full": "block"])
        let pipeline = try builder.build()
        #expect(pipeline.hostComponents(.source) == ["readings"])
        #expect(pipeline.hostComponents(.sink) == ["alerts"])
        let readings = AsyncStream<Event> { continuation in
            for index in 0..<100 { continuation.yield(Self.reading(index)) }
            continuation.finish()
        }
        var count = 0
        _ = try await pipeline.run(inputs: ["readings": .events(readings)]) { run in
            for await _ in run.output("alerts") { count += 1 }
        }
        #expect(count == 38)  // 31...49 and 81...99

        var wrong = PipelineBuilder()
        wrong.source("readings", type: "host")
        wrong.sink("out", type: "stdout", inputs: ["readings"], options: ["encodng": "json"])
        #expect {
            try wrong.build()
        } throws: { error in
            let error = error as? PipelineError
            return error?.diagnostics.first?.message == "unknown key 'encodng' in sink 'out'"
                && error?.diagnostics.first?.mark?.line == 6
        }
    }

    @Test func mistakesAreErrorsNotCrashes() async throws {
        #expect {
            try Pipeline(yaml: "sources:\n  in: {type: host}\nsinks:\n  out: {type: host, inputs: [nowhere]}\n")
        } throws: { error in
            let diagnostic = (error as? PipelineError)?.diagnostics.first
            return diagnostic?.message == "unknown input 'nowhere' for sink 'out'" && diagnostic?.mark?.line == 4
        }
        let pipeline = try Pipeline(yaml: Self.hotReadings)
        await #expect(throws: PipelineError.self) { try await pipeline.run() }
        let (stream, feed) = AsyncStream.makeStream(of: Event.self)
        feed.finish()
        await #expect(throws: PipelineError.self) {
            try await pipeline.run(inputs: ["readings": .events(stream), "other": .events(stream)])
        }
        // The sluice command has no host to feed: its catalog has no host types, the library's has.
        #expect(Pipeline.catalog.typeNames(of: .source).contains("host"))
        #expect(Pipeline.catalog.typeNames(of: .sink).contains("stdout"))
    }

    @Test func aThrowingInputFailsTheRunWithItsError() async throws {
        struct FeedBroke: Error, CustomStringConvertible {
            var description: String { "the feed broke" }
        }
        let pipeline = try Pipeline(
            yaml: "sources: {in: {type: host}}\nsinks: {out: {type: blackhole, inputs: [in]}}\n")
        let failing = AsyncThrowingStream<Event, any Error> { continuation in
            continuation.yield(Self.reading(1))
            continuation.finish(throwing: FeedBroke())
        }
        let result = try await pipeline.run(inputs: ["in": .events(failing)], log: Logger { _ in })
        #expect(result.failures == ["source 'in': the feed broke"])
        #expect(try component("out", in: result.report).sent == 1)
    }
}

/// A thread-safe count, read by the test while the pipeline's tasks add to it; it can tell when it reaches a mark.
final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    private let signal: AsyncStream<Void>.Continuation?
    private let mark: Int

    init(signalling signal: AsyncStream<Void>.Continuation? = nil, at mark: Int = 0) {
        self.signal = signal
        self.mark = mark
    }

    func increment() {
        if count.add(1, ordering: .relaxed).newValue == mark { signal?.yield() }
    }

    var value: Int { count.load(ordering: .relaxed) }
}

/// Readings without end, counting how many were taken.
struct EndlessReadings: AsyncSequence, Sendable {
    typealias Element = Event
    let pulled: Counter

    func makeAsyncIterator() -> Iterator { Iterator(pulled: pulled) }

    struct Iterator: AsyncIteratorProtocol {
        let pulled: Counter
        var next = 0

        mutating func next() async -> Event? {
            if Task.isCancelled { return nil }
            pulled.increment()
            next += 1
            return PipelineLibraryTests.reading(next)
        }
    }
}

/// The result of `operation`, or `nil` if it has not come within a number of seconds: a wait that cannot hang
/// the test run, even when the operation never ends (it is then left running). The bound only turns a hang into a
/// failure; it must be far beyond how long a healthy operation is starved: in the whole test run, the end-to-end
/// tests' blocking waits hold both threads of Swift's cooperative pool for tens of seconds at a time, and a run
/// here that takes milliseconds alone once took 65 s.
enum FirstOf<Value: Sendable> {
    /// Lets only the first of the operation and the timer resume the waiting test.
    private final class Once: Sendable {
        private let done = Atomic(false)
        func first() -> Bool {
            done.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        }
    }

    static func result(orAfterSeconds seconds: Double, _ operation: @escaping @Sendable () async -> Value?) async
        -> Value?
    {
        await withCheckedContinuation { continuation in
            let once = Once()
            Task {
                let value = await operation()
                if once.first() { continuation.resume(returning: value) }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                if once.first() { continuation.resume(returning: nil) }
            }
        }
    }
}
