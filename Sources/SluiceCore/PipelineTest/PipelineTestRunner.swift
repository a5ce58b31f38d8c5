internal import SluiceSync

/// Runs a pipeline file's tests (`sluice test`): each test inserts its events into components' inputs (or, at a
/// source, as what it emits), runs every transform downstream of them, and checks what transforms emit and what
/// reaches sinks. No source or sink runs: nothing is read from or written to the outside world.
///
/// A test is deterministic: each transform takes its whole input as one batch and is then finished as at the end
/// of input (so open windows close and are emitted, not marked partial), upstream before downstream, and the
/// processing time is one clock reading for the whole test, so a processing-time window never splits.
public struct PipelineTestRunner: Sendable {
    /// The pipeline whose transforms are tested.
    public let definition: PipelineDefinition

    /// A runner for the tests of `definition`.
    public init(definition: PipelineDefinition) {
        self.definition = definition
    }

    /// Runs `test`; `nowMillis` is the processing time every transform sees.
    public func run(_ test: PipelineTest, nowMillis: Int64 = WallClock.nowMillis()) -> PipelineTestResult {
        // What the tested transforms log (evaluation errors, rate-limited), for the failure report.
        let messages = Locked<[String]>([])
        let log = Logger { line in messages.locked { $0.append(line) } }
        let components = Dictionary(uniqueKeysWithValues: definition.components.map { ($0.id, $0) })
        let order = definition.upstreamFirst(from: test.inputs.map(\.insertAt))
        let checked = Set((test.outputs.map(\.extractFrom) + test.noOutputFrom).map(\.text))
        let ingest = MonotonicClock.nanos()

        var pending: [String: [Event]] = [:]
        for input in test.inputs {
            pending[input.insertAt, default: []] += input.events.map { Event($0, ingestNanos: ingest) }
        }
        var emitted: [String: [Event]] = [:]
        var ledgers: [String] = []
        for id in order {
            let component = components[id]!
            guard case .transform(let makeTransform) = component.blueprint.maker else {
                // A source emits what was inserted at it; a sink's output is what reached it.
                emitted[id] = pending[id] ?? []
                for consumer in definition.consumers(of: id) { pending[consumer, default: []] += emitted[id]! }
                continue
            }
            let ports = component.blueprint.outputs
            let read = definition.readOutputs(of: component).union(ports.filter { checked.contains("\(id).\($0)") })
            var transform = makeTransform(TransformContext(id: id, log: log, readOutputs: read))
            var batch = pending[id] ?? []
            let received = batch.count
            var pass = TransformPass(nowMillis: nowMillis)
            transform.process(&batch, &pass)
            var held: [Event] = []
            var finishing = TransformPass(nowMillis: nowMillis)
            transform.finish(&held, &finishing, stopping: false)
            var outputs: [(reference: String, events: [Event])]
            if ports.isEmpty {
                outputs = [(id, batch + held)]
            } else {
                outputs = ports.indices.map { index in
                    let first = index < pass.routed.count ? pass.routed[index] : []
                    let later = index < finishing.routed.count ? finishing.routed[index] : []
                    return ("\(id).\(ports[index])", first + later)
                }
            }
            for (reference, events) in outputs {
                emitted[reference] = events
                for consumer in definition.consumers(of: id, output: InputReference(reference).output) {
                    pending[consumer, default: []] += events
                }
            }
            ledgers.append(
                Self.ledger(
                    id, received: received, outputs: outputs, passes: [pass, finishing], routed: !ports.isEmpty))
        }

        var failures: [PipelineTestResult.Failure] = []
        let notes = ledgers + messages.locked { $0 }
        for output in test.outputs {
            let events = emitted[output.extractFrom.text] ?? []
            let name = output.extractFrom.text
            if let count = output.count, events.count != count {
                failures.append(
                    .init(
                        message: "expected \(Self.events(count)) from '\(name)', got \(events.count)",
                        mark: output.extractFrom.mark, events: events, notes: notes))
            }
            guard !output.conditions.isEmpty else { continue }
            if events.isEmpty {
                failures.append(
                    .init(message: "no event came out of '\(name)'", mark: output.extractFrom.mark, notes: notes))
                continue
            }
            let verdicts = events.map { Self.firstUnmet(output.conditions, by: $0) }
            guard !verdicts.contains(where: { $0 == nil }) else { continue }
            failures.append(
                .init(
                    message: "no event from '\(name)' met every condition", mark: output.extractFrom.mark,
                    events: events, unmet: verdicts.compactMap { $0 }, notes: notes))
        }
        for reference in test.noOutputFrom {
            let events = emitted[reference.text] ?? []
            guard !events.isEmpty else { continue }
            failures.append(
                .init(
                    message: "expected no output from '\(reference.text)', got \(Self.events(events.count))",
                    mark: reference.mark, events: events, notes: notes))
        }
        return PipelineTestResult(name: test.name, mark: test.mark, failures: failures)
    }

    /// The first condition `event` does not meet, with why; `nil` when it meets them all.
    private static func firstUnmet(_ conditions: [PipelineTest.Condition], by event: Event)
        -> PipelineTestResult.Unmet?
    {
        for condition in conditions {
            let reason: String
            do {
                let value = try condition.expression.evaluate(event)
                if value == .bool(true) { continue }
                var shown: [UInt8] = []
                JSONWriter.write(value, to: &shown)
                reason = "is \(String(decoding: shown, as: UTF8.self))"
            } catch {
                reason = "failed: \(error.reason)"
            }
            return .init(condition: condition.expression.source, mark: condition.mark, reason: reason)
        }
        return nil
    }

    /// What a transform did with its input, as a note for failures: where the test's events went.
    private static func ledger(
        _ id: String, received: Int, outputs: [(reference: String, events: [Event])], passes: [TransformPass],
        routed: Bool
    ) -> String {
        var discards = DiscardCounts()
        var folded = 0
        var created = 0
        for pass in passes {
            discards.add(pass.discards)
            folded += pass.folded
            created += pass.created
        }
        var parts = ["received \(received)"]
        if created > 0 { parts.append("created \(created)") }
        if folded > 0 { parts.append("folded \(folded)") }
        if routed {
            parts += outputs.map { "\($0.events.count) to \($0.reference)" }
        } else {
            parts.append("sent \(outputs.first?.events.count ?? 0)")
        }
        let causes = DiscardCause.allCases.filter { discards[$0] > 0 }.map { "\($0.rawValue) \(discards[$0])" }
        if !causes.isEmpty { parts.append("discarded " + causes.joined(separator: ", ")) }
        return "'\(id)': " + parts.joined(separator: ", ")
    }

    private static func events(_ count: Int) -> String { count == 1 ? "1 event" : "\(count) events" }
}

/// The outcome of one test.
public struct PipelineTestResult: Sendable {
    /// The test's name.
    public let name: String
    /// Where the test begins.
    public let mark: FilePosition
    /// Every check that failed; empty when the test passed.
    public let failures: [Failure]

    /// True when every check passed.
    public var passed: Bool { failures.isEmpty }

    /// A check that failed.
    public struct Failure: Sendable {
        /// What was expected and what happened, in one sentence.
        public let message: String
        /// Where the check was written.
        public let mark: FilePosition
        /// The events the checked transform emitted, as JSON text.
        public let events: [String]
        /// For conditions: the first one each event did not meet, in the order of `events`.
        public let unmet: [Unmet]
        /// What each transform did with the test's events, then what they logged (evaluation errors).
        public let notes: [String]

        init(message: String, mark: FilePosition, events: [Event] = [], unmet: [Unmet] = [], notes: [String]) {
            self.message = message
            self.mark = mark
            self.events = events.map(\.jsonText)
            self.unmet = unmet
            self.notes = notes
        }
    }

    /// A condition an event did not meet.
    public struct Unmet: Sendable, Equatable {
        /// The condition as written.
        public let condition: String
        /// Where it was written.
        public let mark: FilePosition
        /// What it gave instead of `true` (`is false`, `is null`), or why it could not be evaluated.
        public let reason: String
    }
}
