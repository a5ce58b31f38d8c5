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
