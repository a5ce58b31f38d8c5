/// What a stage keeps between events to evaluate one expression faster: a ``FieldLocator`` for each top-level field
/// the expression reads, so that each is found where it was in the last event. Made once per stage with
/// ``Expression/makeState()``; the expression itself stays immutable and shared.
public struct ExpressionState: Sendable {
    var locators: [FieldLocator]
}

extension Expression {
    /// A state for evaluating this expression event after event (see ``ExpressionState``).
    public func makeState() -> ExpressionState {
        var names: [String] = []
        root.collectTopLevelKeys(into: &names)
        return ExpressionState(locators: names.map(FieldLocator.init))
    }

    /// The expression's value for `event`, like ``evaluate(_:)-(Event)``, reading its fields where they were in the
    /// last event evaluated with `state`.
    public func evaluate(_ event: Event, _ state: inout ExpressionState) throws(EvaluationError) -> JSONValue {
        guard event.isText, !state.locators.isEmpty else { return try evaluate(event) }
        if pathSteps != nil, state.locators.count == 1 { return event.lookup(&state.locators[0]) ?? .null }
        return try state.locators.withUnsafeMutableBufferPointer { (locators) throws(EvaluationError) in
            try Evaluator.evaluate(root, LocatedEvent(event: event, locators: locators))
        }
    }
}

/// An event read through the locators of an expression's state: one-key paths use their locator, others the
/// event's own lookup.
struct LocatedEvent: FieldSource {
    let event: Event
    let locators: UnsafeMutableBufferPointer<FieldLocator>

    func lookup(_ steps: [PathStep]) -> JSONValue? {
        if steps.count == 1, case .key(let name) = steps[0] {
            for index in locators.indices where locators[index].name == name {
                return event.lookup(&locators[index])
            }
        }
        return event.lookup(steps)
    }
}

extension ExpressionNode {
    /// The distinct first keys of the one-key paths in the tree, in the order they appear.
    func collectTopLevelKeys(into names: inout [String]) {
        switch self {
        case .literal: return
        case .path(let steps), .exists(let steps):
            if steps.count == 1, case .key(let name) = steps[0], !names.contains(name) { names.append(name) }
        case .array(let items), .call(_, let items):
            for item in items { item.collectTopLevelKeys(into: &names) }
        case .not(let operand), .negate(let operand), .matches(let operand, _):
            operand.collectTopLevelKeys(into: &names)
        case .arithmetic(_, let left, let right), .compare(_, let left, let right), .coalesce(let left, let right),
            .and(let left, let right), .or(let left, let right), .contains(let left, list: let right):
            left.collectTopLevelKeys(into: &names)
            right.collectTopLevelKeys(into: &names)
        case .conditional(let condition, let then, let otherwise):
            condition.collectTopLevelKeys(into: &names)
            then.collectTopLevelKeys(into: &names)
            otherwise.collectTopLevelKeys(into: &names)
        }
    }
}
