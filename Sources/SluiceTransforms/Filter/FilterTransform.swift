internal import SluiceCore

/// Keeps the events for which the condition is `true`, in one pass over the batch.
struct FilterTransform: Transform {
    let condition: Expression
    var errors: EvaluationErrorLog
    /// Where the condition's fields were in the last event.
    var state: ExpressionState
    /// The condition's numeric program, if it has one (valid while `condition` lives).
    let numericCode: NumericCode?

    mutating func process(_ events: inout [Event], _ pass: inout TransformPass) {
        // Calling a method of `self.condition` while `self.state` is passed inout copies the expression (a retain
        // and a release) for every event; the local copy makes that one per batch.
        let condition = condition
        let numericCode = numericCode
        events.retainEvents { event in
            // A boolean from the numeric program decides with no value made; a number takes the general switch, and
            // where the numeric program gives up the general one answers without trying it again.
            let numeric = numericCode?.run(event, &state)
            if case .bool(let keep)? = numeric {
                if !keep { pass.discards[.filtered] += 1 }
                return keep
            }
            do throws(EvaluationError) {
                let value =
                    if let numeric { numeric.value } else if numericCode != nil {
                        try condition.evaluateByGeneralProgram(event, &state)
                    } else { try condition.evaluate(event, &state) }
                switch value {
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
