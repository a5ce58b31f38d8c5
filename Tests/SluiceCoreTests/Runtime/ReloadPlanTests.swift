import SluiceCore
import SluiceTesting
import Testing

/// What a reload may change in place, and what needs a restart.
struct ReloadPlanTests {
    static let base = """
        sources:
          in: {type: counter, count: 10}
        transforms:
          t: {type: pass, inputs: [in]}
        sinks:
          out: {type: collect, inputs: [t]}
        """

    func definition(_ text: String) throws -> PipelineDefinition {
        try #require(PipelineLoader(catalog: TestCatalog.catalog, environment: [:]).load(text).definition)
    }

    func plan(_ changed: String) throws -> ReloadPlan {
        ReloadPlan(from: try definition(Self.base), to: try definition(changed))
    }

    @Test func changedTransformsAndSinksAreReplacedAndNothingElse() throws {
        let same = try plan(Self.base)
        #expect(same.replaced.isEmpty && same.rejections.isEmpty && same.kept.isEmpty)
        let changed = try plan(
            Self.base.replacing("inputs: [in]}", with: "inputs: [in], drop_every: 3}")
                .replacing("inputs: [t]}", with: "inputs: [t], into: other}")
                + "\nmetrics: {interval_secs: 5}\n")
        #expect(changed.replaced.map(\.id) == ["t", "out"])
        #expect(changed.rejections.isEmpty)
        #expect(changed.kept == ["metrics"])
    }

    @Test func whatNeedsARestartRejectsTheWholeReload() throws {
        let cases: [(String, [String])] = [
            (
                Self.base + "\n  more: {type: collect, inputs: [in]}\n",
                ["sink 'more' is new"]
            ),
            (
                Self.base.replacing("  t: {type: pass, inputs: [in]}\n", with: "")
                    .replacing("transforms:\n", with: "").replacing(
                        "inputs: [t]", with: "inputs: [in]"),
                ["transform 't' was removed", "sink 'out' reads other inputs"]
            ),
            (
                Self.base.replacing("count: 10", with: "count: 20")
                    .replacing("inputs: [in]}", with: "inputs: [in], drop_every: 2}"),
                ["source 'in' has other options (a running source is kept as it is)"]
            ),
            (
                Self.base.replacing("inputs: [t]}", with: "inputs: [t], buffer: unbounded}"),
                ["sink 'out' has another buffer"]
            ),
        ]
        for (text, rejections) in cases {
            let plan = try plan(text)
            #expect(plan.rejections == rejections)
            #expect(plan.replaced.isEmpty, "nothing is applied with a rejection: \(rejections)")
        }
    }
}
