internal import SluiceCore

/// Applies rename, set, remove and keep to every event of a batch in one pass; an event whose `set` fails is
/// discarded under `error` and its neighbours go on.
struct MapTransform: Transform {
    let config: MapTransformConfig
    var errors: EvaluationErrorLog
    /// Each `set` expression's registers, and where its fields were in the last event.
    var states: [ExpressionState]
    var mergeState: ExpressionState?
    /// Each `set` target that is one top-level key, prepared for appending it to an event's text.
    var targets: [FieldLocator?]
    /// Each `set` expression's numeric program, if it has one (valid while `config` holds the expressions).
    let numericCodes: [NumericCode?]

    mutating func process(_ events: inout [Event], _ pass: inout TransformPass) {
        let config = config
        guard config.onlySets else {
            events.retainEvents { event in
                guard apply(&event) else {
                    pass.discards[.error] += 1
                    return false
                }
                return true
            }
            return
        }
        // The states and targets are taken out for the batch and lent as buffers, so that writing one checks no
        // array's uniqueness per event.
        var states = self.states
        var targets = self.targets
        self.states = []
        self.targets = []
        defer {
            self.states = states
            self.targets = targets
        }
        let sets = config.set
        let codes = numericCodes
        states.withUnsafeMutableBufferPointer { states in
            targets.withUnsafeMutableBufferPointer { targets in
                events.retainEvents { event in
                    guard Self.setFields(of: &event, sets, codes, states, targets, &errors) else {
                        pass.discards[.error] += 1
                        return false
                    }
                    return true
                }
            }
        }
    }

    /// Applies a map that only sets fields: an event still holding its text reads its fields from it and gets new
    /// ones appended to it.
    private static func setFields(
        of event: inout Event, _ sets: [(target: EventPath, value: Expression)], _ codes: [NumericCode?],
        _ states: UnsafeMutableBufferPointer<ExpressionState>, _ targets: UnsafeMutableBufferPointer<FieldLocator?>,
        _ errors: inout EvaluationErrorLog
    ) -> Bool {
        for index in sets.indices {
            do throws(EvaluationError) {
                // Evaluated first, so that reading the event and changing it are not one overlapping access. A
                // number or a boolean from the numeric program is appended as it is, with no value made; where the
                // numeric program gives up, the general one answers without trying it again.
                let value: JSONValue
                if let code = codes[index] {
                    if let scalar = code.run(event, &states[index]) {
                        if targets[index] != nil, event.appendField(&targets[index]!, scalar: scalar) { continue }
                        value = scalar.value
                    } else {
                        value = try sets[index].value.evaluateByGeneralProgram(event, &states[index])
                    }
                } else {
                    value = try sets[index].value.evaluate(event, &states[index])
                }
                if targets[index] != nil, event.appendField(&targets[index]!, value) { continue }
                try event.set(sets[index].target, to: value)
            } catch {
                errors.report(error, in: sets[index].value.source)
                return false
            }
        }
        return true
    }

    private mutating func apply(_ event: inout Event) -> Bool {
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
        if let merge = config.merge {
            do throws(EvaluationError) {
                switch try merge.evaluate(value, &mergeState!) {
                case .null: break
                case .object(let fields):
                    guard case .object(let object) = value else {
                        throw EvaluationError("the event is not an object to merge into")
                    }
                    value = .null
                    var merged = JSONObject.Builder(consume object)
                    for field in fields.fields { merged.set(field.key, field.value) }
                    value = .object(merged.object)
                case let other:
                    throw EvaluationError("'merge' needs an object, found \(JSONWriter.string(other).prefix(40))")
                }
            } catch {
                errors.report(error, in: "merge: \(merge.source)")
                return false
            }
        }
        for (index, (target, expression)) in config.set.enumerated() {
            do {
                try target.set(try expression.evaluate(value, &states[index]), in: &value)
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
