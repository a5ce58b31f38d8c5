internal import SluiceCore

/// Keeps the events for which the condition is `true`, in one pass over the batch.
struct FilterTransform: Transform {
    let condition: Expression
    var errors: EvaluationErrorLog

    mutating func process(_ events: inout [Event], discards: inout DiscardCounts) {
        var kept = 0
        for index in events.indices {
            let keep: Bool
            do throws(EvaluationError) {
                switch try condition.evaluate(events[index].value) {
                case .bool(let flag):
                    keep = flag
                    if !flag { discards[.filtered] += 1 }
                case .null:
                    keep = false
                    discards[.filtered] += 1
                case let other:
                    throw EvaluationError("the condition must be true, false or null, found \(JSONWriter.string(other).prefix(40))")
                }
            } catch {
                keep = false
                discards[.error] += 1
                errors.report(error, in: condition.source)
            }
            // Compact in place: kept events move forward, no second array.
            if keep {
                if kept != index { events.swapAt(kept, index) }
                kept += 1
            }
        }
        events.removeLast(events.count - kept)
    }
}
