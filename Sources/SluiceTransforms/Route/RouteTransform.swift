internal import SluiceCore

/// Sends each event to every route whose condition is true; an event that matches none goes to `_unmatched`, or,
/// when nothing reads that, is discarded under `unmatched`. An event counts once as sent, however many routes it
/// goes to. A condition that fails to evaluate counts as false for that route (and is reported); an event that then
/// matches nothing is discarded under `error`.
struct RouteTransform: Transform {
    let routes: [(name: String, condition: Expression)]
    let unmatchedIsRead: Bool
    var errors: EvaluationErrorLog
    /// The conditions' numeric programs, sharing their field reads: a field that several conditions read is found
    /// and parsed once per event.
    let programs: SharedNumericPrograms
    var shared: ExpressionState
    /// Each condition's own state, for its general program.
    var states: [ExpressionState]
    /// How many events each output (the unmatched one last) took in the last batch: its room in the next, so that
    /// appending to it does not grow it, a copy each time, on the way.
    var lastCounts: [Int]

    init(routes: [(name: String, condition: Expression)], unmatchedIsRead: Bool, errors: EvaluationErrorLog) {
        self.routes = routes
        self.unmatchedIsRead = unmatchedIsRead
        self.errors = errors
        programs = SharedNumericPrograms(routes.map(\.condition))
        shared = programs.makeState()
        states = routes.map { $0.condition.makeState() }
        lastCounts = Array(repeating: 0, count: routes.count + 1)
    }

    mutating func process(_ events: inout [Event], _ pass: inout TransformPass) {
        // A local copy, so that reading a condition while `states` changes copies nothing per event.
        let routes = routes
        var outputs = lastCounts.map { count -> [Event] in
            var output: [Event] = []
            output.reserveCapacity(min(events.count, count + count / 8 + 16))
            return output
        }
        var spare = SpareTexts()
        for index in events.indices {
            // Taken out of the batch (an empty event, which holds no storage, left in its place; the batch is
            // emptied below): read in place from here on, and moved, not copied, to the last route it goes to.
            var event = exchange(&events[index], with: Event(.null))
            programs.begin(&shared)
            // The routes the event goes to: how many, the last of them, and whether a condition failed.
            var matches = 0
            var last = 0
            var failed = false
            for route in routes.indices {
                do throws(EvaluationError) {
                    let value: JSONValue
                    if let fast = programs.run(route, event, &shared) {
                        value = fast
                    } else {
                        value = try routes[route].condition.evaluateByGeneralProgram(event, &states[route])
                    }
                    switch value {
                    case .bool(true):
                        // Copied to every route but the last it goes to, which takes the event itself; each copy
                        // has a text of its own, as its consumer runs in another task (``Event/copy(into:)``).
                        if matches > 0 { outputs[last].append(event.copy(into: &spare)) }
                        matches += 1
                        last = route
                    case .bool(false), .null:
                        break
                    case let other:
                        throw EvaluationError(
                            "the condition must be true, false or null, found \(JSONWriter.string(other).prefix(40))")
                    }
                } catch {
                    failed = true
                    errors.report(error, in: routes[route].condition.source)
                }
            }
            if matches == 0 {
                if failed {
                    pass.discards[.error] += 1
                    continue
                }
                guard unmatchedIsRead else {
                    pass.discards[.unmatched] += 1
                    continue
                }
                last = routes.count
            }
            pass.routedEvents += 1
            outputs[last].append(consume event)
        }
        spare.finish()
        for output in outputs.indices { lastCounts[output] = outputs[output].count }
        pass.routed = outputs
        events.removeAll(keepingCapacity: true)
    }
}
