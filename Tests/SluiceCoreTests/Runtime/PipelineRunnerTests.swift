import SluiceTesting
import Synchronization
import Testing

@testable import SluiceCore

struct PipelineRunnerTests {
    func load(_ text: String) throws -> PipelineDefinition {
        let result = PipelineLoader(catalog: TestCatalog.catalog, environment: [:]).load(text)
        #expect(result.diagnostics.isEmpty, "\(result.diagnostics)")
        return try #require(result.definition)
    }

    func run(_ definition: PipelineDefinition) async -> (RunOutcome, MetricsReport) {
        let runner = PipelineRunner(definition: definition, log: Logger { _ in })
        let outcome = await runner.run(reporter: nil)
        let report = MetricsReporter(
            settings: definition.metrics, components: runner.metrics, consumers: runner.consumers,
            writer: OutputWriter(fileDescriptor: -1, label: "unused")
        ).makeReport(final: true)
        return (outcome, report)
    }

    @Test func fanOutSendsEveryEventToEachConsumerAndMergeJoinsInputs() async throws {
        let definition = try load(
            """
            sources:
              a: {type: counter, count: 5000}
              b: {type: counter, count: 300}
            transforms:
              t: {type: pass, inputs: [a, b], drop_every: 10}
            sinks:
              one: {type: collect, inputs: [t], into: fan-one}
              two: {type: collect, inputs: [t, a], into: fan-two, buffer: {max_events: 64}}
            """)
        let (outcome, report) = await run(definition)
        #expect(outcome == RunOutcome(failures: [], outputClosed: false))
        let one = CollectedEvents.take("fan-one")
        let two = CollectedEvents.take("fan-two")
        #expect(one.count == 5300 - 530)
        #expect(two.count == 5300 - 530 + 5000)
        let byID = Dictionary(uniqueKeysWithValues: report.components.map { ($0.id, $0) })
        #expect(byID["t"]?.received == 5300)
        #expect(byID["t"]?.discarded[.filtered] == 530)
        #expect(byID["two"]?.buffer?.highWaterEvents ?? .max <= 64)
        // Conservation: at exit, every component has received = sent + discarded.
        for component in report.components {
            #expect(component.received == component.sent + component.discarded.total, "\(component.id)")
            #expect(component.buffer?.events ?? 0 == 0)
        }
    }

    /// A source that commits positions never commits past an event a failed sink did not write: the floor stays at
    /// the batch the sink failed on, although the events arriving afterwards are discarded (which finishes them).
    @Test func afterASinkFailsTheFinishedFloorStaysBeforeWhatItDidNotWrite() async throws {
        let definition = try load(
            """
            sources:
              in: {type: counter, count: 5000, record_finished: floor-after-failure}
            sinks:
              out: {type: collect, inputs: [in], into: floor-after-failure, fail_after: 1000, buffer: {max_events: 200}}
            """)
        let (outcome, report) = await run(definition)
        #expect(outcome.failures.count == 1)
        let written = CollectedEvents.take("floor-after-failure").count
        let record = try #require(FinishedRecords.take("floor-after-failure"))
        // The source's batches are 100 events each; the first one not written is batch `written / 100`.
        let firstUnwritten = try #require(record.batchIngestNanos.dropFirst(written / 100).first)
        #expect(record.finishedBefore <= firstUnwritten, "the floor went past an event that was never written")
        #expect(record.finishedBefore > record.batchIngestNanos[0], "what was written before the failure is finished")
        let sink = try #require(report.components.first { $0.id == "out" })
        #expect(sink.discarded[.error] > 0)
    }

    /// A transform with the default buffer whose only input is a transform feeding nothing else runs in that
    /// transform's task: no buffer, `runs_in` names the task's first transform, and every component balances.
    /// A transform that asks for at most N events a pass (a hopping aggregate) gets larger batches in parts, each
    /// sent on through the rest of its chain before the next: order and counts are kept, fused or not.
    @Test func aTransformGetsBatchesNoLargerThanItAsksFor() async throws {
        let definition = try load(
            """
            sources:
              numbers: {type: counter, count: 5000}
            transforms:
              first: {type: pass, inputs: [numbers], drop_every: 7, passes_into: parts-first}
              limited: {type: pass, inputs: [first], max_events_per_pass: 30, passes_into: parts-limited}
              after: {type: pass, inputs: [limited], drop_every: 5}
            sinks:
              out: {type: collect, inputs: [after], into: parts-out}
            """)
        let (outcome, report) = await run(definition)
        #expect(outcome == RunOutcome(failures: [], outputClosed: false))
        let first = CollectedEvents.take("parts-first").compactMap { $0.value.intValue }
        let limited = CollectedEvents.take("parts-limited").compactMap { $0.value.intValue }
        #expect(first.contains { $0 > 30 }, "the counter sends batches of 100")
        #expect(limited.allSatisfy { $0 <= 30 }, "\(limited.filter { $0 > 30 })")
        let kept = (0..<5000).filter { ($0 + 1) % 7 != 0 }
        #expect(limited.reduce(0, +) == kept.count)
        let written = CollectedEvents.take("parts-out").compactMap { $0.value.intValue }
        #expect(written == kept.enumerated().filter { ($0.offset + 1) % 5 != 0 }.map { Int64($0.element) })
        let byID = Dictionary(uniqueKeysWithValues: report.components.map { ($0.id, $0) })
        #expect(byID["limited"]?.details["runs_in"] == .string("first"), "parts cut inside a fused chain")
        for id in ["first", "limited", "after", "out"] {
            let component = try #require(byID[id])
            #expect(
                component.received + component.created == component.sent + component.discarded.total + component.folded,
                "\(id): \(component)")
        }
        #expect(byID["after"]?.received == kept.count && byID["out"]?.received == written.count)
    }

    @Test func chainedTransformsRunFusedAndStillCountEverything() async throws {
        let definition = try load(
            """
            sources:
              in: {type: counter, count: 10000}
            transforms:
              a: {type: pass, inputs: [in], drop_every: 10}
              b: {type: pass, inputs: [a], drop_every: 3}
              c: {type: pass, inputs: [b]}
              d: {type: pass, inputs: [c], buffer: {max_events: 50}}
              e: {type: pass, inputs: [d]}
              f: {type: pass, inputs: [d]}
            sinks:
              out: {type: collect, inputs: [e, f], into: fused}
            """)
        let (outcome, report) = await run(definition)
        #expect(outcome.failures.isEmpty)
        let byID = Dictionary(uniqueKeysWithValues: report.components.map { ($0.id, $0) })
        // a -> b -> c fused; d has its own buffer; e and f share the input d, so each has a buffer of its own.
        #expect(byID["a"]?.buffer != nil && byID["d"]?.buffer?.maxEvents == 50)
        #expect(byID["e"]?.buffer != nil && byID["f"]?.buffer != nil)
        for id in ["b", "c"] {
            #expect(byID[id]?.buffer == nil, "\(id)")
            #expect(byID[id]?.details["runs_in"] == .string("a"), "\(id)")
        }
        #expect(byID["a"]?.details["runs_in"] == nil)
        #expect(byID["b"]?.received == 9000 && byID["b"]?.discarded[.filtered] == 3000)
        #expect(byID["c"]?.received == 6000 && byID["c"]?.sent == 6000)
        #expect(CollectedEvents.take("fused").count == 12000)
    }

    /// Stateless transforms right after a source that feeds nothing else run in the source's sending: no buffer,
    /// `runs_in` names the source, everything counted as in a task of their own, events in order. The chain stops
    /// at a stateful transform, which gets a task and a buffer (a stateless one after it fuses into that task);
    /// a source with two consumers fuses none, nor does one that does not run them
    /// (``RunsFollowingStatelessTransforms``).
    @Test func statelessTransformsAfterASourceRunInItsSending() async throws {
        let definition = try load(
            """
            sources:
              in: {type: counter, count: 10000, runs_stateless_transforms: true}
              two: {type: counter, count: 1000, runs_stateless_transforms: true}
              plain: {type: counter, count: 1000}
            transforms:
              a: {type: pass, stateless: true, inputs: [in], drop_every: 10}
              b: {type: pass, stateless: true, inputs: [a], drop_every: 3}
              c: {type: pass, inputs: [b]}
              d: {type: pass, stateless: true, inputs: [c]}
              e: {type: pass, stateless: true, inputs: [two]}
              f: {type: pass, stateless: true, inputs: [two]}
              g: {type: pass, stateless: true, inputs: [plain]}
            sinks:
              out: {type: collect, inputs: [d], into: source-fused}
              other: {type: collect, inputs: [e, f, g], into: source-fused-two}
            """)
        let (outcome, report) = await run(definition)
        #expect(outcome.failures.isEmpty)
        let byID = Dictionary(uniqueKeysWithValues: report.components.map { ($0.id, $0) })
        for id in ["a", "b"] {
            #expect(byID[id]?.buffer == nil, "\(id)")
            #expect(byID[id]?.details["runs_in"] == .string("in"), "\(id)")
        }
        #expect(byID["c"]?.buffer != nil && byID["c"]?.details["runs_in"] == nil)
        #expect(byID["d"]?.buffer == nil && byID["d"]?.details["runs_in"] == .string("c"))
        // Two consumers of one source, or a source that does not run them: tasks of their own.
        for id in ["e", "f", "g"] { #expect(byID[id]?.buffer != nil && byID[id]?.details["runs_in"] == nil, "\(id)") }
        #expect(byID["in"]?.sent == 10000)
        #expect(byID["a"]?.received == 10000 && byID["a"]?.discarded[.filtered] == 1000 && byID["a"]?.sent == 9000)
        #expect(byID["b"]?.received == 9000 && byID["b"]?.discarded[.filtered] == 3000 && byID["b"]?.sent == 6000)
        #expect(byID["c"]?.received == 6000)
        let kept: [Int] = (0..<10000).filter { (number: Int) -> Bool in number % 10 != 0 && number % 3 != 0 }
        let expected: [JSONValue] = kept.map { JSONValue.int(Int64($0)) }
        #expect(CollectedEvents.take("source-fused").map(\.value) == expected)
        #expect(CollectedEvents.take("source-fused-two").count == 3000)
        for component in report.components {
            #expect(component.received == component.sent + component.discarded.total, "\(component.id)")
        }
    }

    /// However long, a chain of stateless transforms right after a source that runs them stays in its sending: the
    /// source's threads already share the cores, and a task behind a buffer every few stages only added hops.
    @Test func aLongStatelessChainRunsWholeInTheSourcesSending() async throws {
        let stages = 2 * PipelineRunner.maxFusedStages + 1
        let chain = (0..<stages).map {
            "  t\($0): {type: pass, stateless: true, inputs: [\($0 == 0 ? "in" : "t\($0 - 1)")], drop_every: \($0 + 2)}"
        }
        let definition = try load(
            "sources:\n  in: {type: counter, count: 3000, runs_stateless_transforms: true}\ntransforms:\n"
                + chain.joined(separator: "\n")
                + "\nsinks:\n  out: {type: collect, inputs: [t\(stages - 1)], into: long-source-chain}\n")
        let (outcome, report) = await run(definition)
        #expect(outcome.failures.isEmpty)
        let byID = Dictionary(uniqueKeysWithValues: report.components.map { ($0.id, $0) })
        for index in 0..<stages {
            #expect(byID["t\(index)"]?.buffer == nil, "t\(index)")
            #expect(byID["t\(index)"]?.details["runs_in"] == .string("in"), "t\(index)")
        }
        let kept = (0..<3000).filter { number in (0..<stages).allSatisfy { number % ($0 + 2) != 0 } }
        #expect(CollectedEvents.take("long-source-chain").map(\.value) == kept.map { JSONValue.int(Int64($0)) })
        for component in report.components {
            #expect(component.received == component.sent + component.discarded.total, "\(component.id)")
        }
    }

    /// A long chain is cut into tasks of at most ``PipelineRunner/maxFusedStages`` transforms, so both cores work.
    @Test func longChainsAreCutIntoTasksOfAFewStages() async throws {
        let stages = 2 * PipelineRunner.maxFusedStages + 1
        let chain = (0..<stages).map { "  t\($0): {type: pass, inputs: [\($0 == 0 ? "in" : "t\($0 - 1)")]}" }
        let definition = try load(
            "sources:\n  in: {type: counter, count: 3000}\ntransforms:\n" + chain.joined(separator: "\n")
                + "\nsinks:\n  out: {type: collect, inputs: [t\(stages - 1)], into: long-chain}\n")
        let (_, report) = await run(definition)
        let byID = Dictionary(uniqueKeysWithValues: report.components.map { ($0.id, $0) })
        for index in 0..<stages {
            let head = index / PipelineRunner.maxFusedStages * PipelineRunner.maxFusedStages
            #expect((byID["t\(index)"]?.buffer != nil) == (index == head), "t\(index)")
            #expect(byID["t\(index)"]?.details["runs_in"] == (index == head ? nil : .string("t\(head)")), "t\(index)")
            #expect(byID["t\(index)"]?.sent == 3000)
        }
        #expect(CollectedEvents.take("long-chain").count == 3000)
        for component in report.components {
            #expect(component.received == component.sent + component.discarded.total, "\(component.id)")
        }
    }

    @Test func dropPoliciesCountWhatTheyDiscard() async throws {
        let definition = try load(
            """
            sources:
              in: {type: counter, count: 100000}
            sinks:
              out: {type: collect, inputs: [in], into: drops, buffer: {max_events: 10, when_full: drop_newest}}
            """)
        let (_, report) = await run(definition)
        let sink = try #require(report.components.last)
        let collected = CollectedEvents.take("drops")
        #expect(sink.received == 100_000)
        #expect(sink.sent == collected.count)
        #expect(sink.sent + sink.discarded[.bufferFull] == 100_000)
        // The counter sends batches of 100 into room for 10: at most the first 10 of each batch fit, and
        // drop_newest keeps those (the oldest), whatever the timing.
        #expect(sink.discarded[.bufferFull] >= 90_000)
        let positions = collected.map { event -> Int64 in
            guard case .int(let value) = event.value else { return -1 }
            return value % 100
        }
        #expect(positions.allSatisfy { $0 >= 0 && $0 < 10 }, "only the oldest of each batch are kept")
    }
}
