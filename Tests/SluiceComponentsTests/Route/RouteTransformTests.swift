import SluiceCore
import SluiceTesting
import Testing

struct RouteTransformTests {
    static let options = #"{routes: {errors: '.level == "error"', slow: '.duration_ms > 1000'}}"#

    static func events() -> [JSONValue] {
        var events: [JSONValue] = []
        for index in 0..<300 {
            let level = ["info", "error", "warn"][index % 3]
            events.append(["level": .string(level), "duration_ms": .int(Int64(index * 10)), "n": .int(Int64(index))])
        }
        return events
    }

    /// Every event reaches exactly the routes whose condition is true, and counts once however many that is.
    @Test func everyEventReachesExactlyItsRoutes() throws {
        var route = try TransformHarness.make("route", Self.options, readOutputs: ["errors", "slow", "_unmatched"])
        var events = Self.events().map { Event($0) }
        var pass = TransformPass(nowMillis: 0)
        route.process(&events, &pass)
        #expect(events.isEmpty)
        let outputs = pass.routed.map { $0.map(\.value) }
        let all = Self.events()
        #expect(outputs[0] == all.filter { $0["level"] == "error" })
        #expect(outputs[1] == all.filter { ($0["duration_ms"]?.intValue ?? 0) > 1000 })
        #expect(outputs[2] == all.filter { $0["level"] != "error" && ($0["duration_ms"]?.intValue ?? 0) <= 1000 })
        #expect(pass.routedEvents == 300)
        #expect(pass.discards.total == 0)
    }

    /// An event that goes to several routes goes to each with a text of its own, as their consumers run in other
    /// tasks (``Event/copy(into:)``).
    @Test func anEventInSeveralRoutesHasATextOfItsOwnInEach() throws {
        var route = try TransformHarness.make("route", Self.options, readOutputs: ["errors", "slow", "_unmatched"])
        var events = try [#"{"level":"error","duration_ms":2000}"#, #"{"level":"info","duration_ms":5}"#].map {
            try Event(json: Array($0.utf8))
        }
        var pass = TransformPass(nowMillis: 0)
        route.process(&events, &pass)
        #expect(pass.routed.map(\.count) == [1, 1, 1])
        #expect(pass.routed[0][0] == pass.routed[1][0])
        #expect(textAddress(of: pass.routed[0][0]) != nil)
        #expect(textAddress(of: pass.routed[0][0]) != textAddress(of: pass.routed[1][0]))
    }

    /// With more routes than a word has bits, an event still goes to exactly its routes, in order; an event whose
    /// only condition fails is discarded under `error`, one matching nothing under `unmatched`.
    @Test func manyRoutesAndFailedConditions() throws {
        let routes = (0..<70).map { "r\($0): '.n % 70 == \($0) || .n == 139'" }.joined(separator: ", ")
        let names = (0..<70).map { "r\($0)" }
        var route = try TransformHarness.make(
            "route", "{routes: {\(routes), strict: '.n > \"x\"'}}", readOutputs: Set(names + ["strict"]))
        var events = (0..<300).map { Event(["n": .int(Int64($0))]) }
        events.append(Event(["n": .string("a")]))
        var pass = TransformPass(nowMillis: 0)
        route.process(&events, &pass)
        for output in 0..<70 {
            let expected = (0..<300).filter { $0 % 70 == output || $0 == 139 }.map { JSONValue.int(Int64($0)) }
            #expect(pass.routed[output].map { $0.value["n"] } == expected, "route r\(output)")
        }
        #expect(pass.routed[70].isEmpty)
        #expect(pass.routedEvents == 300)
        #expect(pass.discards[.error] == 1)
    }

    /// The output that took the most events of the last batch is built in the batch itself, and the outputs are
    /// exact whichever one that is: across batches whose largest output changes, with events that go to several
    /// routes (each with a text of its own) and events that go nowhere.
    @Test func theLastBatchsLargestOutputIsBuiltInTheBatch() throws {
        var route = try TransformHarness.make(
            "route", "{routes: {two: '.n % 2 == 0', three: '.n % 3 == 0'}}",
            readOutputs: ["two", "three", "_unmatched"])
        // Most go to `two`, then to `three`, then nowhere, then to `two` again.
        let batches: [[Int]] = [
            Array(0..<60), (0..<40).map { 6 * $0 + 3 } + [0, 1, 2], (0..<50).map { 6 * $0 + 1 } + [6, 12],
            Array(0..<60),
        ]
        var largest = 0
        for (number, numbers) in batches.enumerated() {
            var events = try numbers.map { try Event(json: Array(#"{"n":\#($0)}"#.utf8)) }
            let storage = events.withUnsafeBufferPointer { $0.baseAddress }
            var pass = TransformPass(nowMillis: 0)
            route.process(&events, &pass)
            let expected = [
                numbers.filter { $0 % 2 == 0 }, numbers.filter { $0 % 3 == 0 },
                numbers.filter { $0 % 2 != 0 && $0 % 3 != 0 },
            ]
            let routed = pass.routed.map { $0.map { $0.value["n"]?.intValue } }
            #expect(routed == expected.map { $0.map(Int64.init) }, "batch \(number)")
            #expect(pass.routedEvents == numbers.count)
            #expect(pass.routed[largest].withUnsafeBufferPointer { $0.baseAddress } == storage, "batch \(number)")
            let both = zip(pass.routed[0], expected[0]).filter { $0.1 % 3 == 0 }.map(\.0)
            let inThree = Dictionary(uniqueKeysWithValues: zip(expected[1], pass.routed[1]))
            for event in both {
                let n = Int(event.value["n"]?.intValue ?? -1)
                #expect(textAddress(of: event) != nil)
                #expect(textAddress(of: event) != inThree[n].flatMap(textAddress(of:)), "batch \(number), n \(n)")
            }
            largest = expected.indices.max { expected[$0].count < expected[$1].count } ?? 0
        }
    }

    @Test func unmatchedEventsNobodyReadsAreCounted() throws {
        var route = try TransformHarness.make("route", Self.options, readOutputs: ["errors", "slow"])
        var events = Self.events().map { Event($0) }
        var pass = TransformPass(nowMillis: 0)
        route.process(&events, &pass)
        let unmatched = Self.events().filter { $0["level"] != "error" && ($0["duration_ms"]?.intValue ?? 0) <= 1000 }
        #expect(pass.routed[2].isEmpty)
        #expect(pass.discards[.unmatched] == unmatched.count)
        #expect(pass.routedEvents + pass.discards[.unmatched] == 300)
    }
}

/// Route outputs in `inputs`, checked when the file is read.
struct RouteConfigTests {
    static func pipeline(_ inputs: String, extra: String = "") -> String {
        """
        sources:
          logs: {type: list, values: ['{"level":"error"}']}
        transforms:
          by_level:
            type: route
            inputs: [logs]
            routes:
              errors: '.level == "error"'
              slow: .duration_ms > 1000
        sinks:
          alerts: {type: collect, inputs: \(inputs)}\(extra)
        """
    }

    @Test func aMisspelledRouteIsAnErrorAtItsColumnWithASuggestion() {
        let text = ComponentHarness.diagnostics(Self.pipeline("[by_level.eror, by_level.slow]"))
        #expect(
            text == """
                p.yaml:11:36: error: unknown output 'eror' of 'by_level'
                  alerts: {type: collect, inputs: [by_level.eror, by_level.slow]}
                                                   ^
                note: expected one of: by_level.errors, by_level.slow, by_level._unmatched; did you mean 'by_level.errors'?
                p.yaml:4:3: error: output 'by_level.errors' is not an input of any transform or sink
                  by_level:
                  ^
                note: its events would go nowhere; name it in some component's 'inputs'
                """)
    }

    @Test func aRouteIsReadThroughItsOutputsAndOnlyARouteHasThem() {
        let bare = ComponentHarness.diagnostics(Self.pipeline("[by_level]"))
        #expect(bare.contains("error: 'by_level' has named outputs; read one of them"))
        #expect(bare.contains("note: expected one of: by_level.errors, by_level.slow, by_level._unmatched"))
        let source = ComponentHarness.diagnostics(
            Self.pipeline("[by_level.errors, by_level.slow, logs.x]"))
        #expect(source.contains("error: 'logs' has no output named 'x'"))
        let fine = ComponentHarness.load(Self.pipeline("[by_level.errors, by_level.slow]"))
        #expect(fine.diagnostics.isEmpty, "\(fine.diagnostics)")
    }

    @Test func routesRunEndToEndAndCountEachEventOnce() async throws {
        let yaml = """
            sources:
              logs:
                type: list
                values: ['{"level":"error","duration_ms":5000}', '{"level":"error","duration_ms":1}',
                         '{"level":"info","duration_ms":3000}', '{"level":"info","duration_ms":2}']
            transforms:
              by_level:
                type: route
                inputs: [logs]
                routes:
                  errors: '.level == "error"'
                  slow: .duration_ms > 1000
            sinks:
              alerts: {type: collect, inputs: [by_level.errors], into: route-errors}
              slow: {type: collect, inputs: [by_level.slow], into: route-slow}
            """
        let (_, report) = try await ComponentHarness.runEvents(yaml, collecting: "route-errors")
        let slow = CollectedEvents.take("route-slow").map(\.value)
        #expect(slow.map { $0["duration_ms"] } == [5000, 3000])
        let route = try #require(report.components.first { $0.id == "by_level" })
        #expect(route.received == 4)
        #expect(route.sent == 3, "each event counts once, however many routes it went to")
        #expect(route.discarded[.unmatched] == 1, "nothing reads _unmatched")
    }

    /// Who reads a component, and each of its outputs, is kept in an index beside the components: it answers as a
    /// search of every component's inputs does, through named outputs read together, fan-out and fan-in, and again
    /// after the components change.
    @Test func readersAreFoundAsASearchOfEveryInputFindsThem() throws {
        var definition = try #require(
            ComponentHarness.load(
                """
                sources:
                  a: {type: stdin}
                  b: {type: simulator, rate: 1, seed: 1}
                transforms:
                  r: {type: route, inputs: [a, b], routes: {hot: ".t > 1", cold: ".t <= 1"}}
                  m: {type: map, inputs: [r.hot, r._unmatched], set: {x: "1"}}
                  f: {type: filter, inputs: [r.cold, a], condition: "true"}
                sinks:
                  both: {type: stdout, inputs: [r.hot, r.cold, m]}
                  rest: {type: blackhole, inputs: [f, m, b]}
                """
            ).definition)
        func check(_ definition: PipelineDefinition, sourceLocation: SourceLocation = #_sourceLocation) {
            for component in definition.components {
                let searched = definition.components.filter { reader in
                    reader.inputs.contains { InputReference($0).id == component.id }
                }.map(\.id)
                #expect(definition.allConsumers(of: component.id) == searched, sourceLocation: sourceLocation)
                for output in [nil, "hot", "cold", "_unmatched", "none"] {
                    let reference = output.map { "\(component.id).\($0)" } ?? component.id
                    #expect(
                        definition.consumers(of: component.id, output: output)
                            == definition.components.filter { $0.inputs.contains(reference) }.map(\.id),
                        "\(reference)", sourceLocation: sourceLocation)
                }
            }
        }
        check(definition)
        #expect(definition.allConsumers(of: "r") == ["m", "f", "both"])
        #expect(definition.consumers(of: "r", output: "hot") == ["m", "both"])
        definition.components.removeAll { $0.id == "m" }
        check(definition)
        #expect(definition.allConsumers(of: "r") == ["f", "both"])
    }

}
