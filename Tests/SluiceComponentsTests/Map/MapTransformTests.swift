import SluiceCore
import Testing

struct MapTransformTests {
    @Test func renameThenSetThenRemoveThenKeep() async throws {
        let (events, _) = try await ComponentHarness.run(
            #"""
            sources:
              in: {type: list, values: ['{"temperature": 30, "humidity": 40, "heading_deg": 90, "lat": 52.52, "lon": 13.405}']}
            transforms:
              m:
                type: map
                inputs: [in]
                rename: {humidity: rh}
                set:
                  temperature_f: .temperature * 9 / 5 + 32
                  alert.near_depot: distance_m(.lat, .lon, 52.52, 13.405) < 500
                  alert.level: '.alert.near_depot ? "near" : "far"'
                  rh_pct: .rh / 100
                remove: [heading_deg, lat]
            sinks:
              out: {type: collect, inputs: [m], into: map-order}
            """#, collecting: "map-order")
        #expect(events.count == 1)
        #expect(
            JSONWriter.string(events[0])
                == #"{"temperature":30,"lon":13.405,"rh":40,"temperature_f":86.0,"alert":{"near_depot":true,"level":"near"},"rh_pct":0.4}"#
        )
    }

    @Test func keepProjectsAndAFailingSetDiscardsOnlyThatEvent() async throws {
        let (events, report) = try await ComponentHarness.run(
            #"""
            sources:
              in: {type: list, values: ['{"a": 1, "b": {"c": 2, "d": 3}, "e": 4}', '{"a": "x", "b": {"c": 5}}', '{"a": 2}']}
            transforms:
              m:
                type: map
                inputs: [in]
                set: {double: .a * 2}
                keep: [double, b.c]
            sinks:
              out: {type: collect, inputs: [m], into: map-keep}
            """#, collecting: "map-keep")
        #expect(events.map(JSONWriter.string) == [#"{"double":2,"b":{"c":2}}"#, #"{"double":4}"#])
        #expect(report.components.first { $0.id == "m" }?.discarded[.error] == 1)
    }

    @Test func settingIntoANonObjectIsAnError() async throws {
        let (events, report) = try await ComponentHarness.run(
            #"""
            sources:
              in: {type: list, values: ['{"a": 5}', '[1, 2]']}
            transforms:
              m: {type: map, inputs: [in], set: {a.b: 1}}
            sinks:
              out: {type: collect, inputs: [m], into: map-nonobject}
            """#, collecting: "map-nonobject")
        #expect(events.isEmpty)
        #expect(report.components.first { $0.id == "m" }?.discarded[.error] == 2)
    }

    @Test func anInvalidSetExpressionIsReportedInsideTheValue() {
        let yaml = """
            sources:
              in: {type: list}
            transforms:
              m:
                type: map
                inputs: [in]
                set:
                  x: .a + upper(1, 2)
            sinks:
              out: {type: collect, inputs: [m]}
            """
        #expect(
            ComponentHarness.diagnostics(yaml) == """
                p.yaml:8:15: error: 'upper' takes 1 argument, found 2
                      x: .a + upper(1, 2)
                              ^
                """)
    }
}

struct MapNumericAppendTests {
    /// A set whose numeric program answers is appended to the event's text straight from the number or boolean;
    /// the same events held as parsed values go the general way. Both give the same text and the same discards:
    /// whole numbers, short and 16- to 17-digit doubles, booleans, a field that is already there, a missing one,
    /// an empty object, an integer overflow.
    @Test func numbersAppendedToTextAreWhatTheGeneralWayWrites() throws {
        let options = """
            {set: {i: .a + 1, d: .a / 4, long: .b * 3, f: .b * 9 / 5 + 32, hot: .b > 20, a: .a * 2, big: .a * 1000000000000000000}}
            """
        let lines = [
            #"{"a":1,"b":0.1}"#, #"{"a":-7,"b":25.37}"#, #"{"a":3,"b":21.7,"i":"kept"}"#, #"{"b":1.5}"#, #"{}"#,
            #"{"a":0,"b":100.22}"#, #"{"a":123456789,"b":-0.3}"#,
        ]
        var asText = try lines.map { try Event(json: Array($0.utf8)) }
        var asValues = try lines.map { Event(try JSONReader.parse(Array($0.utf8))) }
        #expect(asText.allSatisfy(\.isText) && !asValues.contains(where: \.isText))
        var textPass = TransformPass(nowMillis: 0)
        var valuePass = TransformPass(nowMillis: 0)
        var textMap = try TransformHarness.make("map", options)
        var valueMap = try TransformHarness.make("map", options)
        textMap.process(&asText, &textPass)
        valueMap.process(&asValues, &valuePass)
        #expect(asText.map(\.jsonText) == asValues.map(\.jsonText))
        #expect(asText.count == 5, "-14 and 246913578 times 10^18 overflow")
        #expect(textPass.discards[.error] == valuePass.discards[.error])
        #expect(
            asText.first?.jsonText
                == #"{"a":2,"b":0.1,"i":2,"d":0.25,"long":0.30000000000000004,"f":32.18,"hot":false,"big":2000000000000000000}"#
        )
    }
}
