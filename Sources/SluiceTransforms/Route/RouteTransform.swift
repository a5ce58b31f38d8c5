internal import SluiceCore

/// Sends each event to every route whose condition is true; an event that matches none goes to `_unmatched`, or,
/// when nothing reads that, is discarded under `unmatched`. An event counts once as sent, however many routes it
/// goes to. A condition that fails to evaluate counts as false for that route (and is reported); an event that then
/// matches nothing is discarded under `error`.
struct RouteTransform: Transform {
    let routes: [(name: String, condition: Expression)]
    let unmatchedIsRead: Bool
    var errors: EvaluationErrorLog
    /// Where each condition's fields were in the last event.
    var states: [ExpressionState]

    mutating func process(_ events: inout [Event], _ pass: inout TransformPass) {
        // A local copy, so that reading a condition while `states` changes copies nothing per event.
        let routes = routes
        var outputs = [[Event]](repeating: [], count: routes.count + 1)
        for index in events.indices {
            // Taken out of the batch, which is emptied below: read in place from here on, and moved, not copied, to
            // the last route it goes to.
            let event = Self.take(&events[index])
            // The routes the event goes to: how many, the last of them, and whether a condition failed.
            var matches = 0
            var last = 0
            var failed = false
            for route in routes.indices {
                do throws(EvaluationError) {
                    switch try routes[route].condition.evaluate(event, &states[route]) {
                    case .bool(true):
                        // Copied to every route but the last it goes to, which takes the event itself.
                        if matches > 0 { outputs[last].append(event) }
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
        pass.routed = outputs
        events.removeAll(keepingCapacity: true)
    }

    /// Moves `event` out, leaving an empty one (which holds no storage) in its place.
    private static func take(_ event: inout Event) -> Event {
        var taken = Event(.null)
        swap(&taken, &event)
        return taken
    }
}
