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
        for event in events {
            var matched = false
            var failed = false
            for index in routes.indices {
                do throws(EvaluationError) {
                    switch try routes[index].condition.evaluate(event, &states[index]) {
                    case .bool(true):
                        outputs[index].append(event)
                        matched = true
                    case .bool(false), .null:
                        break
                    case let other:
                        throw EvaluationError(
                            "the condition must be true, false or null, found \(JSONWriter.string(other).prefix(40))")
                    }
                } catch {
                    failed = true
                    errors.report(error, in: routes[index].condition.source)
                }
            }
            if matched {
                pass.routedEvents += 1
            } else if failed {
                pass.discards[.error] += 1
            } else if unmatchedIsRead {
                outputs[routes.count].append(event)
                pass.routedEvents += 1
            } else {
                pass.discards[.unmatched] += 1
            }
        }
        pass.routed = outputs
        events.removeAll(keepingCapacity: true)
    }
}
