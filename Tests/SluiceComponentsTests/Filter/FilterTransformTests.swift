import Foundation
import SluiceCore
import SluiceTesting
import Testing

struct FilterTransformTests {
    static let values =
        #"["{\"t\": 35, \"b\": 0.5}", "{\"t\": 20, \"b\": 0.5}", "{\"b\": 0.5}", "{\"t\": \"hot\", \"b\": 0.5}", "{\"t\": 31, \"b\": 0.05}", "{\"t\": 40, \"b\": 0.9}"]"#

    @Test func keepsTrueDiscardsFalseAndNullAsFilteredAndErrorsAsError() async throws {
        let (events, report) = try await ComponentHarness.run(
            """
            sources:
              in: {type: list, values: \(Self.values)}
            transforms:
              hot: {type: filter, inputs: [in], condition: '.t > 30 && .b > 0.1'}
              typed: {type: filter, inputs: [in], condition: '.t'}
            sinks:
              out: {type: collect, inputs: [hot], into: filter-out}
              other: {type: collect, inputs: [typed], into: filter-typed}
            """, collecting: "filter-out")
        #expect(events.map { $0["t"] } == [.int(35), .int(40)])
        let hot = try #require(report.components.first { $0.id == "hot" })
        #expect(hot.received == 6)
        #expect(hot.discarded[.filtered] == 4)
        #expect(hot.discarded[.error] == 0)
        let typed = try #require(report.components.first { $0.id == "typed" })
        // `.t` is a number or a string: never a boolean, so every event with .t is an error; null is filtered.
        #expect(typed.discarded[.error] == 5)
        #expect(typed.discarded[.filtered] == 1)
        _ = CollectedEvents.take("filter-typed")
    }

    @Test func aConditionErrorIsReportedAtItsColumn() {
        let yaml = """
            sources:
              in: {type: list}
            transforms:
              f:
                type: filter
                inputs: [in]
                condition: lenght(.name) > 3
            sinks:
              out: {type: collect, inputs: [f]}
            """
        #expect(
            ComponentHarness.diagnostics(yaml) == """
                p.yaml:7:16: error: unknown function 'lenght'
                    condition: lenght(.name) > 3
                               ^
                note: did you mean 'length'?
                """)
        let quoted = yaml.replacingOccurrences(of: "condition: lenght(.name) > 3", with: "condition: '.name >= '")
        #expect(
            ComponentHarness.diagnostics(quoted) == """
                p.yaml:7:26: error: expected an expression, found the end
                    condition: '.name >= '
                                         ^
                """)
    }

    @Test func aFilterNeedsACondition() {
        let yaml =
            "sources:\n  in: {type: list}\ntransforms:\n  f: {type: filter, inputs: [in]}\nsinks:\n  out: {type: collect, inputs: [f]}\n"
        #expect(ComponentHarness.diagnostics(yaml).hasPrefix("p.yaml:4:6: error: transform 'f' has no 'condition'"))
    }
}
