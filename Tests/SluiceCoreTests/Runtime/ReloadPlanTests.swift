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
        #expect(same.changesNothing && same.kept.isEmpty)
        let changed = try plan(
            Self.base.replacing("inputs: [in]}", with: "inputs: [in], drop_every: 3}")
                .replacing("inputs: [t]}", with: "inputs: [t], into: other}")
                + "\nmetrics: {interval_secs: 5}\n")
        #expect(changed.replaced.map(\.new.id) == ["t", "out"])
        #expect(changed.kept == ["metrics"])
    }

    @Test func componentsMayBeAddedRemovedAndRewired() throws {
        let plan = try plan(
            Self.base.replacing("  t: {type: pass, inputs: [in]}\n", with: "  u: {type: pass, inputs: [in]}\n")
                .replacing("inputs: [t]}", with: "inputs: [u, in]}") + "\n  more: {type: collect, inputs: [u]}\n")
        #expect(plan.added.map(\.id) == ["u", "more"])
        #expect(plan.removed.map(\.id) == ["t"])
        #expect(plan.rewired.map(\.new.id) == ["out"])
        #expect(plan.summary == "added 'u', 'more'; removed 't'; rewired 'out'")
    }

    @Test func aSourceWithNewOptionsIsReplacedAndABufferChangedInPlace() throws {
        let plan = try plan(
            Self.base.replacing("count: 10", with: "count: 20")
                .replacing("inputs: [t]}", with: "inputs: [t], buffer: unbounded}"))
        #expect(plan.replaced.map(\.new.id) == ["in"])
        #expect(plan.rebuffered.map(\.id) == ["out"])
        #expect(plan.summary == "replaced 'in'; rebuffered 'out'")
        // The default written out is no change.
        let same = try self.plan(
            Self.base.replacing("inputs: [t]}", with: "inputs: [t], buffer: {max_events: 8000, when_full: block}}"))
        #expect(same.changesNothing)
    }

    @Test func anotherTypeOfTheSameKindIsReplaced() throws {
        let retyped = try plan(
            Self.base.replacing("in: {type: counter, count: 10}", with: "in: {type: list, values: ['{}']}"))
        #expect(retyped.replaced.map { "\($0.running.typeName) -> \($0.new.typeName)" } == ["counter -> list"])
    }

    @Test func anIDThatNamesAnotherKindIsARemovalAndAnAddition() throws {
        let plan = try plan(
            """
            sources:
              in: {type: counter, count: 10}
            sinks:
              t: {type: collect, inputs: [in]}
              out: {type: collect, inputs: [in]}
            """)
        #expect(plan.removed.map { "\($0.kind.rawValue) \($0.id)" } == ["transform t"])
        #expect(plan.added.map { "\($0.kind.rawValue) \($0.id)" } == ["sink t"])
        #expect(plan.summary == "added 't'; removed 't'; rewired 'out'")
    }
}
