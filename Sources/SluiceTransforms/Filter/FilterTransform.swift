internal import SluiceCore

/// Keeps the events for which the condition is `true`, in one pass over the batch.
struct FilterTransform: Transform {
    let condition: Expression
    var errors: EvaluationErrorLog
    /// Where the condition's fields were in the last event.
    var state: ExpressionState

    mutating func process(_ events: inout [Event], _ pass: inout TransformPass) {
        // Calling a method of `self.condition` while `self.state` is passed inout copies the expression (a retain
        // and a release) for every event; the local copy makes that one per batch.
        let condition = condition
        events.retainEvents { event in
            do throws(EvaluationError) {
                switch try condition.evaluate(event, &state) {
                case .bool(true):
                    return true
                case .bool(false), .null:
                    pass.discards[.filtered] += 1
                    return false
                case let other:
                    throw EvaluationError(
                        "the condition must be true, false or null, found \(JSONWriter.string(other).prefix(40))")
                }
            } catch {
                pass.discards[.error] += 1
                errors.report(error, in: condition.source)
                return false
            }
        }
    }
}
