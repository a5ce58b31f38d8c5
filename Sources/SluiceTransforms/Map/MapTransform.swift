internal import SluiceCore

/// Applies rename, set, remove and keep to every event of a batch in one pass; an event whose `set` fails is
/// discarded under `error` and its neighbours go on.
struct MapTransform: Transform {
    let config: MapTransformConfig
    var errors: EvaluationErrorLog

    mutating func process(_ events: inout [Event], discards: inout DiscardCounts) {
        events.retainEvents { event in
            guard apply(&event) else {
                discards[.error] += 1
                return false
            }
            return true
        }
    }

    private mutating func apply(_ event: inout Event) -> Bool {
        if config.onlySets {
            // An event still holding its text reads its fields from it and gets new ones appended to it.
            for (target, expression) in config.set {
                do throws(EvaluationError) {
                    try event.set(target, to: try expression.evaluate(event))
                } catch {
                    errors.report(error, in: expression.source)
                    return false
                }
            }
            return true
        }
        var value = event.value
        // Leave the event holding a placeholder so its object is uniquely referenced and edited in place.
        event.value = .null
        guard apply(&value) else { return false }
        event.value = value
        return true
    }

    private mutating func apply(_ value: inout JSONValue) -> Bool {
        for (from, to) in config.rename {
            guard let moved = from.get(value) else { continue }
            from.remove(from: &value)
            do { try to.set(moved, in: &value) } catch {
                errors.report(error, in: "rename \(from) to \(to)")
                return false
            }
        }
        for (target, expression) in config.set {
            do {
                try target.set(try expression.evaluate(value), in: &value)
            } catch {
                errors.report(error, in: expression.source)
                return false
            }
        }
        for path in config.remove { path.remove(from: &value) }
        if !config.keep.isEmpty {
            var projected = JSONValue.object(JSONObject())
            for path in config.keep {
                if let field = path.get(value) { try? path.set(field, in: &projected) }
            }
            value = projected
        }
        return true
    }
}
