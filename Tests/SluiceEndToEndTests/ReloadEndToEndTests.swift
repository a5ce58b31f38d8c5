import Dispatch
import Foundation
import SluiceCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Reloading the pipeline file of a running `sluice run`: SIGHUP, or a change `--watch` sees.
@Suite(.blocking)
struct ReloadEndToEndTests {
    static func pipeline(condition: String, extra: String = "") -> String {
        """
        sources:
          in: {type: stdin}
        transforms:
          keep: {type: filter, inputs: [in], condition: '\(condition)'}
        sinks:
          out: {type: stdout, inputs: [keep], buffer: {max_events: 1000, when_full: block}}
        \(extra)
        metrics: {interval_secs: 0, to: $METRICS, format: json}
        """
    }

    /// Lines `{"n":first}` ... up to `end`, as one chunk.
    static func lines(_ range: Range<Int>) -> Data {
        Data(range.map { "{\"n\":\($0)}\n" }.joined().utf8)
    }

    /// The `n` of each output line.
    static func numbers(_ output: Data) -> [Int] {
        String(decoding: output, as: UTF8.self).split(separator: "\n").compactMap { line in
            Int(line.dropFirst(5).dropLast())
        }
    }

    func rewrite(_ pipeline: TemporaryPipeline, _ yaml: String) throws {
        try yaml.replacingOccurrences(of: "$METRICS", with: pipeline.metricsPath).write(
            toFile: pipeline.path, atomically: true, encoding: .utf8)
    }

    /// A million events through a `block` pipeline; half-way, with events still in its buffers, the filter's
    /// condition changes. Every event is handled once: before some event by the old condition, from it on by the
    /// new one, none lost, none twice.
    @Test func aReloadUnderABlockStreamHandlesEveryEventOnceByTheOldConditionOrTheNew() throws {
        let total = 1_000_000
        let pipeline = try TemporaryPipeline(Self.pipeline(condition: ".n % 2 == 0"))
        defer { pipeline.remove() }
        let output = try reloadingHalfWay(
            pipeline, total: total, changeTo: Self.pipeline(condition: ".n % 3 == 0"),
            expecting: "reload (SIGHUP): applied: replaced 'keep'")
        let numbers = Self.numbers(output)
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "in order, none twice")
        // The last event only the old condition keeps, and the first only the new one keeps: the cut lies between.
        let lastOld = try #require(numbers.last { $0 % 3 != 0 })
        let firstNew = try #require(numbers.first { $0 % 2 != 0 })
        #expect(lastOld < firstNew)
        #expect(lastOld > 0 && firstNew < total - 10, "events on both sides of the change")
        // Everything between is kept by both. Some cut must account for every event exactly.
        let cuts = (lastOld + 1)...firstNew
        let exact = cuts.contains { cut in
            let evenBefore = (cut + 1) / 2
            let thirdsFrom = (total + 2) / 3 - (cut + 2) / 3
            return evenBefore + thirdsFrom == numbers.count
        }
        #expect(exact, "\(numbers.count) events out, cut between \(lastOld) and \(firstNew)")
        let report = try #require(try pipeline.reports().last)
        #expect(report.int("reloads_total") == 1)
        #expect(report["last_reload"]?["result"] == "applied")
        let keep = try #require(try pipeline.finalComponent("keep"))
        #expect(keep.int("received_events_total") == total)
        #expect(keep.int("sent_events_total") == numbers.count)
        #expect(keep.balances)
    }

    /// A map right after stdin runs in the source's sending; any reload splits it off into a task of its own (here
    /// the reload changes only the sink's buffer). Under a full `block` stream, every event is mapped exactly once
    /// across the switch: the map adds a million to `n`, so an event mapped twice, or not at all, shows.
    @Test func aMapRunningInTheSourceIsSplitOffWithEveryEventMappedOnce() throws {
        let total = 1_000_000
        func yaml(_ buffer: Int) -> String {
            """
            sources:
              in: {type: stdin}
            transforms:
              shift: {type: map, inputs: [in], set: {n: '.n + 1000000'}}
            sinks:
              out: {type: stdout, inputs: [shift], buffer: {max_events: \(buffer), when_full: block}}
            metrics: {interval_secs: 0, to: $METRICS, format: json}
            """
        }
        let pipeline = try TemporaryPipeline(yaml(1000))
        defer { pipeline.remove() }
        let output = try reloadingHalfWay(
            pipeline, total: total, changeTo: yaml(500), expecting: "reload (SIGHUP): applied")
        let numbers = Self.numbers(output)
        #expect(numbers.count == total)
        #expect(numbers == Array(1_000_000..<(1_000_000 + total)), "each event once, in order, mapped once")
        let shift = try #require(try pipeline.finalComponent("shift"))
        #expect(shift["runs_in"] == nil, "split off into a task of its own")
        #expect(shift["buffer"] != .null)
        #expect(shift.int("received_events_total") == total && shift.balances)
    }

    /// Runs `pipeline` on events 0..<total under a `block` stream: once some output came (so that the pipeline is
    /// well under way), writes `changed` over the file without reading on (its buffers are full and blocked when
    /// the change comes), sends SIGHUP, waits for `message` on stderr, then feeds the second half. Returns all
    /// output once it exited 0.
    func reloadingHalfWay(
        _ pipeline: TemporaryPipeline, total: Int, changeTo changed: String, expecting message: String
    ) throws -> Data {
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        defer { child.killIfRunning() }
        let reloaded = Self.feedInHalves(child, total: total)
        var output = Data()
        while output.count < 200_000, let chunk = child.readChunk() { output.append(chunk) }
        try rewrite(pipeline, changed)
        kill(child.process.processIdentifier, SIGHUP)
        #expect(child.waitForErrorText(message), "\(child.errorText)")
        reloaded.signal()
        output.append(child.readAllOutput())
        #expect(child.waitForExit() == 0, "\(child.errorText)")
        return output
    }

    /// Feeds events 0..<total in chunks of a thousand, the second half once the returned semaphore is signalled.
    static func feedInHalves(_ child: SluiceProcess, total: Int) -> DispatchSemaphore {
        let reloaded = DispatchSemaphore(value: 0)
        child.feed { index in
            if index == total / 2_000 { _ = reloaded.wait(timeout: .now() + 120) }
            guard index < total / 1_000 else { return nil }
            return Self.lines(index * 1_000..<(index + 1) * 1_000)
        }
        return reloaded
    }

    /// Feeds ten events per phase, each phase after the test let the previous one go; returns the semaphores.
    static func feedInPhases(_ child: SluiceProcess, phases count: Int) -> [DispatchSemaphore] {
        let phases = (0..<count).map { _ in DispatchSemaphore(value: 0) }
        child.feed { index in
            guard index < 2 * count else { return nil }
            if index % 2 == 1 {
                _ = phases[index / 2].wait(timeout: .now() + 60)
                return Data()
            }
            return Self.lines(index / 2 * 10..<index / 2 * 10 + 10)
        }
        return phases
    }

    /// Runs `pipeline` on two phases of ten events: once the output holds `marker`, writes `changed` over the file,
    /// sends SIGHUP, waits for `message` on stderr and lets the second phase go. Returns all output once it exited 0.
    func reloadingMidway(
        _ pipeline: TemporaryPipeline, until marker: String, changeTo changed: String, expecting message: String
    ) throws -> String {
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        defer { child.killIfRunning() }
        let phases = Self.feedInPhases(child, phases: 2)
        var output = ""
        while !output.contains(marker), let chunk = child.readChunk() {
            output += String(decoding: chunk, as: UTF8.self)
        }
        try rewrite(pipeline, changed)
        kill(child.process.processIdentifier, SIGHUP)
        #expect(child.waitForErrorText(message), "\(child.errorText)")
        phases[0].signal()
        phases[1].signal()
        output += String(decoding: child.readAllOutput(), as: UTF8.self)
        #expect(child.waitForExit() == 0, "\(child.errorText)")
        return output
    }

    /// An invalid file leaves the run as it was, and says why.
    @Test func anInvalidReloadChangesNothing() throws {
        let pipeline = try TemporaryPipeline(Self.pipeline(condition: ".n % 2 == 0"))
        defer { pipeline.remove() }
        let output = try reloadingMidway(
            pipeline, until: "{\"n\":8}", changeTo: "sources: [\n",
            expecting: "not valid; the running pipeline is unchanged")
        #expect(Self.numbers(Data(output.utf8)) == Array(stride(from: 0, to: 20, by: 2)))
        let report = try #require(try pipeline.reports().last)
        #expect(report.int("reloads_total") == 1)
        #expect(report["last_reload"]?["result"] == "invalid")
    }

    /// An id that names a component of another kind is a removal and an addition: the filter `keep` drains and
    /// ends while a file sink `keep` starts, and the stdout sink reads the source from then on. The final report
    /// knows only the sink.
    @Test func anIDTakenByAnotherKindIsRemovedAndAddedWhileEventsFlow() throws {
        let pipeline = try TemporaryPipeline(Self.pipeline(condition: ".n % 2 == 0"))
        defer { pipeline.remove() }
        let file = pipeline.directory.appendingPathComponent("keep.jsonl").path
        let changed = """
            sources: {in: {type: stdin}}
            sinks:
              keep: {type: file, inputs: [in], path: \(file)}
              out: {type: stdout, inputs: [in], template: "changed {.n}"}
            metrics: {interval_secs: 0, to: $METRICS, format: json}
            """
        let output = try reloadingMidway(
            pipeline, until: "{\"n\":8}", changeTo: changed,
            expecting: "applied: added 'keep'; removed 'keep'; rewired 'out'")
        #expect(
            output == [0, 2, 4, 6, 8].map { "{\"n\":\($0)}\n" }.joined() + (10..<20).map { "changed \($0)\n" }.joined())
        #expect(Self.numbers(try Data(contentsOf: URL(fileURLWithPath: file))) == Array(10..<20))
        let report = try #require(try pipeline.reports().last)
        guard case .array(let components)? = report["components"] else {
            Issue.record("no components in \(report)")
            return
        }
        let keep = components.filter { $0["component_id"] == "keep" }
        #expect(keep.count == 1)
        #expect(keep.first?["component_kind"] == "sink")
        #expect(keep.first?.int("sent_events_total") == 10)
        #expect(try pipeline.finalComponent("out")?.int("sent_events_total") == 15)
        #expect(try pipeline.finalComponent("in")?.int("sent_events_total") == 20)
    }

    /// Another `buffer` takes effect in place, keeping what the buffer holds: the metrics show the new policy, and
    /// every event still comes out once.
    @Test func aBufferTakesItsNewPolicyInPlace() throws {
        let pipeline = try TemporaryPipeline(Self.pipeline(condition: "true"))
        defer { pipeline.remove() }
        let changed = Self.pipeline(condition: "true").replacingOccurrences(
            of: "max_events: 1000, when_full: block", with: "max_events: 100, when_full: drop_newest")
        let output = try reloadingMidway(
            pipeline, until: "{\"n\":9}", changeTo: changed, expecting: "applied: rebuffered 'out'")
        #expect(Self.numbers(Data(output.utf8)) == Array(0..<20))
        let out = try #require(try pipeline.finalComponent("out"))
        #expect(out["buffer"]?["when_full"] == "drop_newest")
        #expect(out.int("buffer", "max_events") == 100)
        #expect(out.balances)
    }

    /// With `--watch`, a change to the file is applied without a signal.
    @Test func watchAppliesAChangeToTheFile() throws {
        let pipeline = try TemporaryPipeline(Self.pipeline(condition: ".n % 2 == 0"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path, "--watch"])
        try child.start()
        defer { child.killIfRunning() }
        let phases = Self.feedInPhases(child, phases: 2)
        var output = Data()
        while !Self.numbers(output).contains(8), let chunk = child.readChunk() { output.append(chunk) }
        try rewrite(pipeline, Self.pipeline(condition: ".n % 5 == 0"))
        #expect(
            child.waitForErrorText("reload (\(pipeline.path) changed): applied: replaced 'keep'"), "\(child.errorText)")
        phases[0].signal()
        phases[1].signal()
        output.append(child.readAllOutput())
        #expect(child.waitForExit() == 0, "\(child.errorText)")
        #expect(Self.numbers(output) == [0, 2, 4, 6, 8, 10, 15])
        let report = try #require(try pipeline.reports().last)
        #expect(report.int("reloads_total") == 1)
    }

    /// A sink whose options changed takes over after the old one wrote what it took, with the same buffer and
    /// counters.
    @Test func aChangedSinkTakesOverItsInput() throws {
        let yaml = { (template: String) in
            """
            sources: {in: {type: stdin}}
            sinks: {out: {type: stdout, inputs: [in], template: "\(template)"}}
            metrics: {interval_secs: 0, to: $METRICS, format: json}
            """
        }
        let pipeline = try TemporaryPipeline(yaml("A {.n}"))
        defer { pipeline.remove() }
        let output = try reloadingMidway(
            pipeline, until: "A 9\n", changeTo: yaml("B {.n}"), expecting: "applied: replaced 'out'")
        #expect(output == (0..<10).map { "A \($0)\n" }.joined() + (10..<20).map { "B \($0)\n" }.joined())
        let out = try #require(try pipeline.finalComponent("out"))
        #expect(out.int("sent_events_total") == 20)
        #expect(out.balances)
    }

    /// Another type of the same kind replaces a component where it runs, as new options do: a filter becomes a
    /// map and a `stdout` sink a `file` sink, with their buffers and counters; the metrics name the new types.
    @Test func aTransformAndASinkTakeAnotherTypeOfTheirKind() throws {
        let pipeline = try TemporaryPipeline(Self.pipeline(condition: ".n % 2 == 0"))
        defer { pipeline.remove() }
        let file = pipeline.directory.appendingPathComponent("out.jsonl").path
        let changed = """
            sources: {in: {type: stdin}}
            transforms:
              keep: {type: map, inputs: [in], set: {m: .n * 10}}
            sinks:
              out: {type: file, inputs: [keep], path: \(file), buffer: {max_events: 1000, when_full: block}}
            metrics: {interval_secs: 0, to: $METRICS, format: json}
            """
        let output = try reloadingMidway(
            pipeline, until: "{\"n\":8}", changeTo: changed, expecting: "applied: replaced 'keep', 'out'")
        #expect(Self.numbers(Data(output.utf8)) == [0, 2, 4, 6, 8])
        let written = try String(contentsOfFile: file, encoding: .utf8)
        #expect(written == (10..<20).map { "{\"n\":\($0),\"m\":\($0 * 10)}\n" }.joined())
        let keep = try #require(try pipeline.finalComponent("keep"))
        #expect(keep["component_type"] == "map")
        #expect(keep.int("received_events_total") == 20)
        #expect(keep.int("discarded_events_total", "filtered") == 5)
        #expect(keep.balances)
        let out = try #require(try pipeline.finalComponent("out"))
        #expect(out["component_type"] == "file")
        #expect(out.int("sent_events_total") == 15)
        #expect(out.balances)
    }

    /// A source of another type takes the place of the running one: stdin stops at a line boundary (it is not read
    /// again) and a simulator goes on into the same output, its readings after the stdin events.
    @Test func aSourceTakesAnotherTypeOfItsKind() throws {
        let pipeline = try TemporaryPipeline(Self.pipeline(condition: "true"))
        defer { pipeline.remove() }
        let changed = Self.pipeline(condition: "true").replacingOccurrences(
            of: "in: {type: stdin}", with: "in: {type: simulator, devices: 1, rate: max, count: 5, seed: 3}")
        let output = try reloadingMidway(
            pipeline, until: "{\"n\":9}", changeTo: changed, expecting: "applied: replaced 'in'")
        let lines = output.split(separator: "\n")
        #expect(lines.prefix(10).map(String.init) == (0..<10).map { "{\"n\":\($0)}" })
        #expect(lines.count == 15, "\(output)")
        #expect(lines.dropFirst(10).allSatisfy { $0.hasPrefix("{\"device\":") }, "\(output)")
        let source = try #require(try pipeline.finalComponent("in"))
        #expect(source["component_type"] == "simulator")
        #expect(source.int("sent_events_total") == 15)
        #expect(source.balances)
    }

    /// A transform's named outputs may change with it: a map becomes a route (its sink reads a route from then on)
    /// and back. Every event goes where the transform of its time sent it, or is counted as `unmatched`.
    @Test(arguments: [true, false]) func aTransformsNamedOutputsChangeWithIt(mapFirst: Bool) throws {
        let map = """
            sources: {in: {type: stdin}}
            transforms:
              t: {type: map, inputs: [in], set: {mapped: true}}
            sinks:
              out: {type: stdout, inputs: [t]}
            metrics: {interval_secs: 0, to: $METRICS, format: json}
            """
        let route = map.replacingOccurrences(
            of: "{type: map, inputs: [in], set: {mapped: true}}",
            with: "{type: route, inputs: [in], routes: {even: .n % 2 == 0}}"
        ).replacingOccurrences(of: "inputs: [t]", with: "inputs: [t.even]")
        let pipeline = try TemporaryPipeline(mapFirst ? map : route)
        defer { pipeline.remove() }
        let output = try reloadingMidway(
            pipeline, until: mapFirst ? "{\"n\":9,\"mapped\":true}" : "{\"n\":8}", changeTo: mapFirst ? route : map,
            expecting: "applied: rewired 'out'; replaced 't'")
        let mapped = { (range: Range<Int>) in range.map { "{\"n\":\($0),\"mapped\":true}\n" }.joined() }
        let even = { (range: Range<Int>) in range.filter { $0 % 2 == 0 }.map { "{\"n\":\($0)}\n" }.joined() }
        #expect(output == (mapFirst ? mapped(0..<10) + even(10..<20) : even(0..<10) + mapped(10..<20)))
        let t = try #require(try pipeline.finalComponent("t"))
        #expect(t["component_type"] == (mapFirst ? "route" : "map"))
        #expect(t.int("discarded_events_total", "unmatched") == 5)
        #expect(t.balances)
        #expect(try pipeline.finalComponent("out")?.int("sent_events_total") == 15)
    }

    /// A route given another route, read by a sink the reload adds, and whose `_unmatched` is read from then on,
    /// sends to both from the change on. (Before, the new route's events went nowhere and the run never ended.)
    @Test func aRouteSendsToTheRoutesAndReadersAReloadGivesIt() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources: {in: {type: stdin}}
            transforms:
              r: {type: route, inputs: [in], routes: {even: .n % 2 == 0}}
            sinks:
              out: {type: stdout, inputs: [r.even]}
            metrics: {interval_secs: 0, to: $METRICS, format: json}
            """)
        defer { pipeline.remove() }
        let directory = pipeline.directory.path
        let changed = """
            sources: {in: {type: stdin}}
            transforms:
              r: {type: route, inputs: [in], routes: {even: .n % 2 == 0, threes: .n % 3 == 0}}
            sinks:
              out: {type: stdout, inputs: [r.even]}
              threes: {type: file, inputs: [r.threes], path: \(directory)/threes.jsonl}
              rest: {type: file, inputs: [r._unmatched], path: \(directory)/rest.jsonl}
            metrics: {interval_secs: 0, to: $METRICS, format: json}
            """
        let output = try reloadingMidway(
            pipeline, until: "{\"n\":8}", changeTo: changed, expecting: "applied: added 'threes', 'rest'; replaced 'r'")
        #expect(Self.numbers(Data(output.utf8)) == Array(stride(from: 0, to: 20, by: 2)))
        let file = { (name: String) in
            Self.numbers(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(name).jsonl")))
        }
        #expect(try file("threes") == [12, 15, 18])
        #expect(try file("rest") == [11, 13, 17, 19])
        let r = try #require(try pipeline.finalComponent("r"))
        #expect(r.int("discarded_events_total", "unmatched") == 5)
        #expect(r.int("sent_events_total") == 15)
        #expect(r.balances)
    }

    /// A route whose input has ended (its stdin closed while another source runs on) takes no replacement: the
    /// route a reload gives it ends at once, so the sink reading it ends too and SIGTERM ends the run.
    @Test func aNewRouteOfATransformThatEndedEndsTooAndTheRunStops() throws {
        let yaml = { (routes: String, sinks: String) in
            """
            sources:
              in: {type: stdin}
              tick: {type: simulator, devices: 1, rate: 20, seed: 1}
            transforms:
              r: {type: route, inputs: [in], routes: {\(routes)}}
            sinks:
              out: {type: stdout, inputs: [r.even]}
              ticks: {type: blackhole, inputs: [tick]}
            \(sinks)
            metrics: {interval_secs: 0.05, to: $METRICS, format: json}
            """
        }
        let pipeline = try TemporaryPipeline(yaml("even: .n % 2 == 0", ""))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        defer { child.killIfRunning() }
        child.feed { $0 == 0 ? Self.lines(0..<10) : nil }
        var output = Data()
        while !Self.numbers(output).contains(8), let chunk = child.readChunk() { output.append(chunk) }
        // Every event through the route (its input ended with them, so it ended too, all but surely).
        let deadline = ContinuousClock.now + .seconds(60)
        while pipeline.latest("r")?.int("received_events_total") != 10, ContinuousClock.now < deadline {
            usleep(20_000)
        }
        let file = pipeline.directory.appendingPathComponent("threes.jsonl").path
        try rewrite(
            pipeline,
            yaml(
                "even: .n % 2 == 0, threes: .n % 3 == 0",
                "  threes: {type: file, inputs: [r.threes], path: \(file)}"))
        kill(child.process.processIdentifier, SIGHUP)
        #expect(child.waitForErrorText("applied: added 'threes'; replaced 'r'"), "\(child.errorText)")
        kill(child.process.processIdentifier, SIGTERM)
        output.append(child.readAllOutput(seconds: 60))
        #expect(child.waitForExit(seconds: 60) == 0, "\(child.errorText)")
        #expect(Self.numbers(output) == [0, 2, 4, 6, 8])
    }

    /// A stateful transform replaced by a reload first emits what it holds, marked partial; the new one starts
    /// empty with the events after the change.
    @Test func aReplacedAggregateEmitsItsOpenWindowAsPartial() throws {
        let yaml = { (aggregations: String) in
            """
            sources: {in: {type: stdin}}
            transforms:
              count: {type: aggregate, inputs: [in], window: {type: tumbling, size_secs: 3600}, aggregations: {\(aggregations)}}
            sinks: {out: {type: stdout, inputs: [count]}}
            metrics: {interval_secs: 0.05, to: $METRICS, format: json}
            """
        }
        let pipeline = try TemporaryPipeline(yaml("events: count()"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        defer { child.killIfRunning() }
        let phases = Self.feedInPhases(child, phases: 2)
        // The first ten events are folded into the open window (the periodic reports say so); then the
        // aggregations change.
        func folded() -> Int? {
            guard let report = (try? pipeline.reports())?.last, case .array(let components)? = report["components"]
            else { return nil }
            return components.first { $0["component_id"] == "count" }?.int("folded_events_total")
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while folded() != 10, ContinuousClock.now < deadline { usleep(20_000) }
        #expect(folded() == 10)
        try rewrite(pipeline, yaml("events: count(), total: sum(.n)"))
        kill(child.process.processIdentifier, SIGHUP)
        #expect(child.waitForErrorText("applied: replaced 'count'"), "\(child.errorText)")
        phases[0].signal()
        phases[1].signal()
        let lines = String(decoding: child.readAllOutput(), as: UTF8.self).split(separator: "\n")
        #expect(child.waitForExit() == 0, "\(child.errorText)")
        let windows = try lines.map { try JSONReader.parse(String($0)) }
        #expect(windows.count == 2, "\(lines)")
        #expect(windows.first?["events"] == .int(10))
        #expect(windows.first?["partial"] == .bool(true))
        #expect(windows.last?["events"] == .int(10))
        #expect(windows.last?["total"] == .int(145))
        #expect(windows.last?["partial"] == nil)
        let count = try #require(try pipeline.finalComponent("count"))
        #expect(count.int("folded_events_total") == 20)
        #expect(count.int("created_events_total") == 2)
    }

    /// New components start and removed ones drain and stop, under a running stream: a filter is taken out (its
    /// sink reads the source directly from then on), a simulator and a second sink come in. Every stdin event comes
    /// out once, filtered before a cut and unfiltered after it.
    @Test func componentsAreAddedRemovedAndRewiredWhileEventsFlow() throws {
        let before = Self.pipeline(condition: ".n % 2 == 0")
        let after = """
            sources:
              in: {type: stdin}
              sim: {type: simulator, devices: 2, rate: 1000, count: 5, seed: 7}
            sinks:
              out: {type: stdout, inputs: [in, sim], buffer: {max_events: 1000, when_full: block}}
              tally: {type: blackhole, inputs: [in]}
            metrics: {interval_secs: 0, to: $METRICS, format: json}
            """
        let pipeline = try TemporaryPipeline(before)
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        defer { child.killIfRunning() }
        let total = 200_000
        let reloaded = Self.feedInHalves(child, total: total)
        var output = Data()
        while output.count < 100_000, let chunk = child.readChunk() { output.append(chunk) }
        try rewrite(pipeline, after)
        kill(child.process.processIdentifier, SIGHUP)
        #expect(
            child.waitForErrorText("applied: added 'sim', 'tally'; removed 'keep'; rewired 'out'"), "\(child.errorText)"
        )
        reloaded.signal()
        output.append(child.readAllOutput())
        #expect(child.waitForExit() == 0, "\(child.errorText)")

        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n")
        let numbers = lines.compactMap { line in line.hasPrefix("{\"n\":") ? Int(line.dropFirst(5).dropLast()) : nil }
        #expect(lines.count - numbers.count == 5, "the simulator's five readings")
        #expect(Set(numbers).count == numbers.count, "none twice")
        // Before the cut only even numbers came (through the filter), from it on every number: the first odd one
        // is the cut, or the one after it.
        let firstOdd = try #require(numbers.filter { $0 % 2 != 0 }.min())
        #expect(firstOdd > 10_000 && firstOdd < total / 2 + 1_000, "the cut came half-way: \(firstOdd)")
        let expected = (0..<firstOdd).filter { $0 % 2 == 0 } + Array(firstOdd..<total)
        #expect(numbers.count == expected.count)
        #expect(Set(numbers) == Set(expected))
        let report = try #require(try pipeline.reports().last)
        guard case .array(let components)? = report["components"] else { throw Failure("no components") }
        let ids = components.compactMap { $0["component_id"]?.stringValue }
        #expect(ids == ["in", "out", "sim", "tally"], "the removed filter left the report once it drained")
        // The new sink saw every event from the cut on.
        let tally = try #require(try pipeline.finalComponent("tally")?.int("received_events_total"))
        #expect([total - firstOdd, total - firstOdd + 1].contains(tally), "\(tally)")
        #expect(try pipeline.finalComponent("out")?.balances == true)
    }

    /// A transform that runs in another's task is taken out by splitting the chain at the next batch: the first ten
    /// events pass both maps, the next ten only the first.
    @Test func aFusedTransformIsTakenOutOfItsChain() throws {
        let yaml = { (second: String) in
            """
            sources: {in: {type: stdin}}
            transforms:
              a: {type: map, inputs: [in], set: {x: 1}}
              \(second)
            sinks: {out: {type: stdout, inputs: [\(second.isEmpty ? "a" : "b")]}}
            metrics: {interval_secs: 0, to: $METRICS, format: json}
            """
        }
        let pipeline = try TemporaryPipeline(yaml("b: {type: map, inputs: [a], set: {y: 2}}"))
        defer { pipeline.remove() }
        let output = try reloadingMidway(
            pipeline, until: "\"n\":9,", changeTo: yaml(""), expecting: "applied: removed 'b'; rewired 'out'")
        let lines = output.split(separator: "\n")
        #expect(lines.count == 20)
        #expect(lines.prefix(10).allSatisfy { $0.hasSuffix(",\"x\":1,\"y\":2}") }, "\(lines)")
        #expect(lines.suffix(10).allSatisfy { $0.hasSuffix(",\"x\":1}") }, "\(lines)")
        let report = try #require(try pipeline.reports().last)
        guard case .array(let components)? = report["components"] else { throw Failure("no components") }
        #expect(components.compactMap { $0["component_id"]?.stringValue } == ["in", "a", "out"])
        #expect(try pipeline.finalComponent("a")?.int("sent_events_total") == 20)
    }

    /// A sink added to read the middle of a fused chain gets what that transform sends from the change on; the
    /// chain goes on in parts, every transform with its own buffer.
    @Test func aSinkCanReadTheMiddleOfAFusedChain() throws {
        let yaml = { (extra: String) in
            """
            sources: {in: {type: stdin}}
            transforms:
              a: {type: map, inputs: [in], set: {x: 1}}
              b: {type: filter, inputs: [a], condition: .n % 2 == 0}
              c: {type: map, inputs: [b], set: {z: 3}}
            sinks:
              out: {type: stdout, inputs: [c]}
              \(extra)
            metrics: {interval_secs: 0, to: $METRICS, format: json}
            """
        }
        let pipeline = try TemporaryPipeline(yaml(""))
        defer { pipeline.remove() }
        let output = try reloadingMidway(
            pipeline, until: "\"n\":8,", changeTo: yaml("mid: {type: blackhole, inputs: [b]}"),
            expecting: "applied: added 'mid'")
        let lines = output.split(separator: "\n")
        #expect(lines.count == 10)
        #expect(lines.allSatisfy { $0.hasSuffix(",\"x\":1,\"z\":3}") }, "\(lines)")
        #expect(try pipeline.finalComponent("mid")?.int("received_events_total") == 5)
        let b = try #require(try pipeline.finalComponent("b"))
        #expect(b["buffer"] != .null, "b has a buffer of its own after the split")
        #expect(b.int("received_events_total") == 20)
        #expect(b.balances)
        #expect(try pipeline.finalComponent("c")?.int("received_events_total") == 10)
    }

    /// The API shows the pipeline as a reload made it: `/api/pipeline` lists a sink the reload added, and the sink
    /// can be tapped.
    @Test func theAPIShowsThePipelineAReloadMade() throws {
        let yaml = { (extra: String) in
            """
            sources: {sensors: {type: simulator, devices: 2, rate: 50, seed: 3}}
            sinks:
              out: {type: blackhole, inputs: [sensors]}
              \(extra)
            api: {listen: 127.0.0.1:0, token: "${SLUICE_TEST_TOKEN}"}
            metrics: {interval_secs: 0, to: $METRICS, format: json}
            """
        }
        let api = try APIPipeline(yaml(""))
        defer { api.stop() }
        func ids() throws -> [String] {
            let body = try api.get("/api/pipeline", headers: api.bearer)["body"]?.stringValue ?? ""
            guard case .array(let components)? = try JSONReader.parse(body)["components"] else { return [] }
            return components.compactMap { $0["id"]?.stringValue }
        }
        #expect(try ids() == ["sensors", "out"])
        try rewrite(api.pipeline, yaml("more: {type: blackhole, inputs: [sensors]}"))
        kill(api.child.process.processIdentifier, SIGHUP)
        #expect(api.child.waitForErrorText("applied: added 'more'"), "\(api.child.errorText)")
        #expect(try ids() == ["sensors", "out", "more"])
        let tap = try APIPeer.run(
            ["tap", api.base, "/api/tap?component=more&limit=3&rate=100", "--token", APIPipeline.token])
        #expect(tap["messages"]?.arrayValue?.count == 3, "\(tap)")
    }
}

/// A test failure with a message, for guards.
private struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
