import SluiceCore
import SluiceTesting
import Testing

/// The `tests:` section: how it is read (its errors pinned as users see them) and what a test run checks.
struct PipelineTestTests {
    /// A pipeline of two chained `pass` transforms, the second discarding every second event, one beside them
    /// discarding every event, and the given tests.
    static func pipeline(_ tests: String) -> String {
        """
        sources:
          in: {type: counter}
        transforms:
          first: {type: pass, inputs: [in]}
          second: {type: pass, inputs: [first], drop_every: 2}
          aside: {type: pass, inputs: [in], drop_every: 1}
        sinks:
          out: {type: collect, inputs: [second, aside]}
        tests:

        """ + tests
    }

    func load(_ text: String) -> PipelineLoader.Result {
        PipelineLoader(catalog: TestCatalog.catalog, environment: [:]).load(text)
    }

    func render(_ text: String) -> String {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        return load(text).diagnostics.map { $0.rendered(path: "p.yaml", sourceLines: lines) }.joined(separator: "\n")
    }

    func run(_ tests: String) throws -> [PipelineTestResult] {
        let definition = try #require(load(Self.pipeline(tests)).definition)
        let runner = PipelineTestRunner(definition: definition)
        return definition.tests.map { runner.run($0, nowMillis: 1_796_040_000_000) }
    }

    // MARK: - Reading

    @Test func eventsAreYAMLValuesByTheCoreSchema() throws {
        let definition = try #require(
            load(
                Self.pipeline(
                    """
                      - name: typed
                        inputs:
                          - insert_at: first
                            events: [{i: 42, d: -1.5e3, t: true, n: null, e: ~, s: "42", w: hello, a: [1, x], o: {k: .5}}]
                        no_output_from: [second]
                    """)
            ).definition)
        let event = try #require(definition.tests.first?.inputs.first?.events.first)
        let expected: JSONValue = .object([
            "i": .int(42), "d": .double(-1500), "t": .bool(true), "n": .null, "e": .null, "s": .string("42"),
            "w": .string("hello"), "a": .array([.int(1), .string("x")]), "o": .object(["k": .string(".5")]),
        ])
        #expect(event == expected)
    }

    /// An event's keys stay in the order written, however many (they are checked for repeats in a set).
    @Test func anEventOfManyKeysKeepsTheirOrder() throws {
        let keys = (0..<20_000).map { "k\($0)" }
        let event = "{" + keys.enumerated().map { "\($1): \($0)" }.joined(separator: ", ") + "}"
        let definition = try #require(
            load(
                Self.pipeline(
                    "  - name: wide\n    inputs: [{insert_at: first, events: [\(event)]}]\n    no_output_from: [second]\n"
                )
            ).definition)
        let read = try #require(definition.tests.first?.inputs.first?.events.first)
        guard case .object(let object) = read else {
            Issue.record("not an object: \(read)")
            return
        }
        #expect(object.fields.map(\.key) == keys)
        #expect(object.fields.map(\.value) == (0..<20_000).map { JSONValue.int(Int64($0)) })
    }

    static let errorCases: [(name: String, tests: String, expected: String)] = [
        (
            "an unknown insert_at, with a suggestion",
            "  - name: t\n    inputs: [{insert_at: frist, events: [{}]}]\n    no_output_from: [second]\n",
            """
            p.yaml:11:26: error: insert_at 'frist' is not a component
                inputs: [{insert_at: frist, events: [{}]}]
                                     ^
            note: expected one of: aside, first, in, out, second; did you mean 'first'?
            """
        ),
        (
            "a check on a component the inserted events cannot reach",
            "  - name: t\n    inputs: [{insert_at: first, events: [{}]}]\n    no_output_from: [aside]\n",
            """
            p.yaml:12:22: error: no event inserted by this test can reach 'aside'
                no_output_from: [aside]
                                 ^
            note: events are inserted at 'first'; 'aside' does not read from them
            """
        ),
        (
            "a source cannot be checked",
            "  - name: t\n    inputs: [{insert_at: in, events: [{}]}]\n    outputs: [{extract_from: in, count: 1}]\n",
            """
            p.yaml:12:30: error: extract_from 'in' is not a transform or sink
                outputs: [{extract_from: in, count: 1}]
                                         ^
            note: expected one of: aside, first, out, second
            """
        ),
        (
            "a test that checks nothing, and an output check without a condition or count",
            "  - name: t\n    inputs: [{insert_at: first, events: [{}]}]\n    outputs: [{extract_from: second}]\n"
                + "  - name: u\n    inputs: [{insert_at: first, events: [{}]}]\n",
            """
            p.yaml:12:30: error: extract_from 'second' checks nothing
                outputs: [{extract_from: second}]
                                         ^
            note: add 'conditions' (met by at least one event) or 'count' (how many events)
            p.yaml:13:5: error: test 'u' checks nothing
              - name: u
                ^
            note: add 'outputs' (what must come out of a transform) or 'no_output_from' (what must not)
            """
        ),
        (
            "a condition that is not an expression, at its column",
            "  - name: t\n    inputs: [{insert_at: first, events: [{}]}]\n"
                + "    outputs: [{extract_from: second, conditions: [.x ==]}]\n",
            """
            p.yaml:12:56: error: expected an expression, found the end
                outputs: [{extract_from: second, conditions: [.x ==]}]
                                                                   ^
            """
        ),
        (
            "a key written twice in an event",
            "  - name: t\n    inputs: [{insert_at: first, events: [{a: 1, b: 2, a: 3}]}]\n    no_output_from: [second]\n",
            """
            p.yaml:11:55: error: duplicate key 'a' in an event
                inputs: [{insert_at: first, events: [{a: 1, b: 2, a: 3}]}]
                                                                  ^
            """
        ),
        (
            "duplicate test names",
            "  - name: t\n    inputs: [{insert_at: first, events: [{}]}]\n    no_output_from: [second]\n"
                + "  - name: t\n    inputs: [{insert_at: first, events: [{}]}]\n    no_output_from: [second]\n",
            """
            p.yaml:13:5: error: duplicate test name 't'
              - name: t
                ^
            note: a test named 't' is already at line 10
            """
        ),
    ]

    @Test(arguments: errorCases.indices)
    func errorsNameTheLineAndColumn(_ index: Int) {
        let (name, tests, expected) = Self.errorCases[index]
        let text = Self.pipeline(tests)
        #expect(render(text) == expected, "\(name)")
        #expect(load(text).definition == nil, "\(name)")
    }

    // MARK: - Running

    @Test func aTestPassesWhenSomeEventMeetsEveryConditionAndTheCountIsRight() throws {
        let results = try run(
            """
              - name: counts and conditions
                inputs:
                  - insert_at: first
                    events: [{n: 1}, {n: 2}, {n: 3}, {n: 4}]
                outputs:
                  - extract_from: second
                    count: 2
                    conditions: [.n == 3]
                  - extract_from: out
                    conditions: [.n == 1, .n < 2]
            """)
        #expect(results.map(\.passed) == [true])
    }

    @Test func eachFailureSaysWhatCameOutAndWhereTheEventsWent() throws {
        let results = try run(
            """
              - name: wrong
                inputs:
                  - insert_at: first
                    events: [{n: 1}, {n: 2}]
                outputs:
                  - extract_from: second
                    count: 2
                    conditions: [.n == 2, .missing.field > 1]
                no_output_from: [out]
            """)
        let failures = try #require(results.first?.failures)
        #expect(
            failures.map(\.message) == [
                "expected 2 events from 'second', got 1",
                "no event from 'second' met every condition",
                "expected no output from 'out', got 1 event",
            ])
        #expect(failures.map(\.mark.line) == [15, 15, 18])
        #expect(failures[1].events == [#"{"n":1}"#])
        #expect(failures[1].unmet.map(\.condition) == [".n == 2"])
        #expect(failures[1].unmet.map(\.reason) == ["is false"])
        #expect(
            failures[0].notes == ["'first': received 2, sent 2", "'second': received 2, sent 1, discarded filtered 1"])
    }

    @Test func anEvaluationErrorIsShownAsTheReason() throws {
        let results = try run(
            """
              - name: errors
                inputs: [{insert_at: first, events: [{s: "text"}]}]
                outputs: [{extract_from: first, conditions: ['.s * 2 > 1']}]
            """)
        let unmet = try #require(results.first?.failures.first?.unmet.first)
        #expect(unmet.reason.hasPrefix("failed: "))
        #expect(unmet.mark == FilePosition(line: 12, column: 50))
    }

    @Test func noOutputAtAllIsItsOwnFailure() throws {
        let results = try run(
            """
              - name: nothing
                inputs: [{insert_at: aside, events: [{n: 1}]}]
                outputs: [{extract_from: aside, conditions: [.n == 1]}]
            """)
        #expect(results.first?.failures.map(\.message) == ["no event came out of 'aside'"])
    }

    @Test func eventsInsertedAtASourceReachItsSinks() throws {
        let results = try run(
            """
              - name: fan-out
                inputs: [{insert_at: in, events: [{n: 1}, {n: 2}]}]
                outputs:
                  - {extract_from: aside, count: 0}
                  - {extract_from: out, count: 1, conditions: [.n == 1]}
            """)
        #expect(results.first?.failures.map(\.message) == [])
    }
}
