internal import SluiceRegex

#if canImport(Glibc)
    internal import Glibc
#endif

/// Why evaluating an expression for one event failed; the event is then discarded under cause `error`.
public struct EvaluationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, such as "cannot multiply a string and an integer".
    public let reason: String

    /// An error with `reason`.
    public init(_ reason: String) { self.reason = reason }

    /// The reason.
    public var description: String { reason }
}

/// A compiled expression: parsed, checked and constant-folded once when the pipeline loads, then run per event as
/// an `ExpressionProgram`.
///
/// Values follow JSON: integers and doubles combine numerically (`/` always gives a double), arithmetic with
/// `null` gives `null`, `==` works across types, ordering across types or with `null` is false. Type errors,
/// division by zero and integer overflow are ``EvaluationError``s, never traps.
public struct Expression: Sendable {
    /// Everything, behind one reference: stages copy expressions per event where a method call overlaps a change to
    /// their state, and a copy then costs one retain.
    let program: ExpressionProgram

    /// The text the expression was compiled from.
    public var source: String { program.source }
    var root: ExpressionNode { program.root }
    /// The steps when the whole expression is one field path, the commonest kind (`.device`, `.temperature`): read
    /// with one lookup instead of a program.
    public var pathSteps: [PathStep]? { program.pathSteps }

    /// Compiles `source`; errors carry the character offset of the problem.
    public init(_ source: String) throws(ExpressionError) {
        let parsed = try ExpressionParser.parse(source)
        let root: ExpressionNode
        do {
            root = try Folder.fold(parsed)
        } catch {
            throw ExpressionError(error.reason, at: 0, note: "this part of the expression is always an error")
        }
        program = ExpressionProgram(root, source: source)
    }

    /// A state for evaluating this expression event after event: its registers, and where each field it reads was
    /// in the last event. Each stage keeps its own.
    public func makeState() -> ExpressionState { program.initialState }

    /// The expression's value for `event`.
    public func evaluate(_ event: JSONValue) throws(EvaluationError) -> JSONValue {
        var state = program.initialState
        return try program.run(event, &state)
    }

    /// The expression's value for `event`, with the registers of `state`.
    public func evaluate(_ event: JSONValue, _ state: inout ExpressionState) throws(EvaluationError) -> JSONValue {
        try program.run(event, &state)
    }

    /// The expression's value for `event`, reading fields from its text when it still has one. Stages that
    /// evaluate every event use ``evaluate(_:_:)-(Event,_)`` with a state of their own instead.
    public func evaluate(_ event: Event) throws(EvaluationError) -> JSONValue {
        if let pathSteps { return event.lookup(pathSteps) ?? .null }
        var state = program.initialState
        return try program.run(event, &state)
    }

    /// The expression's value for `event`, reading each field where it was in the last event evaluated with
    /// `state`.
    public func evaluate(_ event: Event, _ state: inout ExpressionState) throws(EvaluationError) -> JSONValue {
        try program.run(event, &state)
    }

    /// True when the expression also has a ``NumericProgram``, tried first.
    package var hasNumericProgram: Bool { program.numeric != nil }

    /// The expression's ``NumericProgram``, for a stage to call per event with no reference counted; `nil` when it
    /// has none.
    package var numericCode: NumericCode? { program.numeric.map { NumericCode($0.compiled) } }

    /// The value by the general program alone: for a stage whose ``numericCode`` gave up on this event, and for
    /// tests that hold the numeric program to it.
    package func evaluateByGeneralProgram(_ event: Event, _ state: inout ExpressionState) throws(EvaluationError)
        -> JSONValue
    {
        try program.runGeneral(event, &state)
    }

    /// True when the value is a literal known at load.
    public var isConstant: Bool { root.isLiteral }
}

// MARK: - Constant folding

/// Evaluates every pure subtree without paths once, so literal mistakes (`"a" * 2`) are load-time errors and
/// constants cost nothing per event.
private enum Folder {
    static func fold(_ node: ExpressionNode) throws(EvaluationError) -> ExpressionNode {
        let folded: ExpressionNode
        switch node {
        case .literal, .path, .exists: return node
        case .array(let items): folded = .array(try items.map { (item) throws(EvaluationError) in try fold(item) })
        case .not(let operand): folded = .not(try fold(operand))
        case .negate(let operand): folded = .negate(try fold(operand))
        case .arithmetic(let op, let left, let right): folded = .arithmetic(op, try fold(left), try fold(right))
        case .compare(let op, let left, let right): folded = .compare(op, try fold(left), try fold(right))
        case .contains(let item, let list): folded = .contains(try fold(item), list: try fold(list))
        case .coalesce(let left, let right): folded = .coalesce(try fold(left), try fold(right))
        case .and(let left, let right): folded = .and(try fold(left), try fold(right))
        case .or(let left, let right): folded = .or(try fold(left), try fold(right))
        case .conditional(let condition, let then, let otherwise):
            folded = .conditional(try fold(condition), then: try fold(then), else: try fold(otherwise))
        case .call(let function, let arguments):
            folded = .call(function, try arguments.map { (argument) throws(EvaluationError) in try fold(argument) })
            guard function.isPure else { return folded }
        case .regex(let use, let subject, let pattern): folded = .regex(use, try fold(subject), pattern)
        case .parseTime(let subject, let format): folded = .parseTime(try fold(subject), format)
        }
        guard folded.childrenAreLiterals else { return folded }
        let program = ExpressionProgram(folded, source: "")
        var state = program.initialState
        return .literal(try program.run(JSONValue.null, &state))
    }
}

extension ExpressionNode {
    fileprivate var childrenAreLiterals: Bool {
        switch self {
        case .literal: true
        case .path, .exists: false
        case .array(let items): items.allSatisfy(\.isLiteral)
        case .not(let operand), .negate(let operand): operand.isLiteral
        case .arithmetic(_, let left, let right), .compare(_, let left, let right), .coalesce(let left, let right),
            .and(let left, let right), .or(let left, let right):
            left.isLiteral && right.isLiteral
        case .contains(let item, let list): item.isLiteral && list.isLiteral
        case .conditional(let condition, let then, let otherwise):
            condition.isLiteral && then.isLiteral && otherwise.isLiteral
        case .call(_, let arguments): arguments.allSatisfy(\.isLiteral)
        case .regex(_, let subject, _), .parseTime(let subject, _): subject.isLiteral
        }
    }
}

// MARK: - Evaluation

/// The semantics of the operators, shared by the program and the functions.
enum Evaluator {
    static func negate(_ value: JSONValue) throws(EvaluationError) -> JSONValue {
        switch value {
        case .null: return .null
        case .int(let value):
            guard value != .min else { throw EvaluationError("integer overflow in '-'") }
            return .int(-value)
        case .double(let value): return .double(-value)
        case let other: throw EvaluationError("cannot negate \(describe(other))")
        }
    }

    /// `item in list`.
    static func contains(_ item: JSONValue, in list: JSONValue) throws(EvaluationError) -> JSONValue {
        switch list {
        case .array(let items): return .bool(items.contains { equal(item, $0) })
        case .null: return .bool(false)
        case let other: throw EvaluationError("'in' needs a list on its right, found \(describe(other))")
        }
    }

    /// `matches` or `parse_regex` of a subject value.
    static func regex(_ use: RegexUse, _ subject: JSONValue, _ matcher: RegexMatcher) throws(EvaluationError)
        -> JSONValue
    {
        switch subject {
        case .null: return .null
        case .string(var text):
            return try text.withUTF8 { bytes in
                Result { () throws(EvaluationError) in try regex(use, UnsafeRawBufferPointer(bytes), matcher) }
            }.get()
        case let other: throw EvaluationError("'\(use.functionName)' needs a string, found \(describe(other))")
        }
    }

    /// `matches` or `parse_regex` of valid UTF-8 bytes: whether the pattern matches, or an object of its named
    /// groups (strings; null for a group that took no part), an error when it does not match.
    static func regex(_ use: RegexUse, _ bytes: UnsafeRawBufferPointer, _ matcher: RegexMatcher)
        throws(EvaluationError) -> JSONValue
    {
        let found: Bool
        do {
            found = try matcher.matches(bytes)
        } catch {
            throw EvaluationError("'\(use.functionName)' gave up on this value: \(error.message)")
        }
        guard use == .captures else { return .bool(found) }
        guard found else { throw EvaluationError("'parse_regex' found no match for its pattern") }
        var object = JSONObject()
        for (name, number) in matcher.pattern.namedGroups {
            guard let range = matcher.group(number) else {
                object[name] = .null
                continue
            }
            object[name] = .string(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self))
        }
        return .object(object)
    }

    static func parseTime(_ subject: JSONValue, _ format: TimeFormat) throws(EvaluationError) -> JSONValue {
        switch subject {
        case .null: return .null
        case .string(let text):
            guard let millis = format.parse(text) else {
                throw EvaluationError("'parse_time' cannot read \"\(text.prefix(40))\" as \"\(format.source)\"")
            }
            return .int(millis)
        case let other: throw EvaluationError("'parse_time' needs a string, found \(describe(other))")
        }
    }

    /// The value at `steps`, or `nil` when a key is missing or an index out of range.
    static func lookup(_ steps: [PathStep], in value: JSONValue) -> JSONValue? {
        var current = value
        for step in steps {
            switch (step, current) {
            case (.key(let key), .object(let object)):
                guard let next = object[key] else { return nil }
                current = next
            case (.index(let index), .array(let items)):
                let position = index < 0 ? items.count + index : index
                guard items.indices.contains(position) else { return nil }
                current = items[position]
            default:
                return nil
            }
        }
        return current
    }

    /// `true` and `false` as they are, `null` as false; anything else is a type error.
    static func truth(_ value: JSONValue, _ role: String) throws(EvaluationError) -> Bool {
        switch value {
        case .bool(let flag): return flag
        case .null: return false
        default: throw EvaluationError("\(role) must be true, false or null, found \(describe(value))")
        }
    }

    static func arithmetic(_ op: ArithmeticOperator, _ left: JSONValue, _ right: JSONValue) throws(EvaluationError)
        -> JSONValue
    {
        switch (left, right) {
        case (.null, _), (_, .null):
            return .null
        case (.string(let a), .string(let b)) where op == .add:
            return .string(a + b)
        case (.int(let a), .int(let b)):
            switch op {
            case .add: return try checked(a.addingReportingOverflow(b), op)
            case .subtract: return try checked(a.subtractingReportingOverflow(b), op)
            case .multiply: return try checked(a.multipliedReportingOverflow(by: b), op)
            case .divide:
                guard b != 0 else { throw EvaluationError("division by zero") }
                return .double(Double(a) / Double(b))
            case .remainder:
                guard b != 0 else { throw EvaluationError("division by zero in '%'") }
                return try checked(a.remainderReportingOverflow(dividingBy: b), op)
            }
        default:
            guard let a = number(left), let b = number(right) else {
                throw EvaluationError("cannot \(op.verb) \(describe(left)) and \(describe(right))")
            }
            if let result = op.apply(a, b) { return .double(result) }
            if b == 0, op == .divide { throw EvaluationError("division by zero") }
            if b == 0, op == .remainder { throw EvaluationError("division by zero in '%'") }
            throw EvaluationError("the result of '\(op.rawValue)' is not finite")
        }
    }

    private static func checked(_ result: (partialValue: Int64, overflow: Bool), _ op: ArithmeticOperator)
        throws(EvaluationError) -> JSONValue
    {
        guard !result.overflow else { throw EvaluationError("integer overflow in '\(op.rawValue)'") }
        return .int(result.partialValue)
    }

    static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .int(let n): Double(n)
        case .double(let d): d
        default: nil
        }
    }

    /// Equality across types: numbers compare numerically, other types must match.
    static func equal(_ left: JSONValue, _ right: JSONValue) -> Bool {
        switch (left, right) {
        case (.int(let a), .int(let b)): a == b
        case (.int, .double), (.double, .int), (.double, .double): number(left) == number(right)
        default: left == right
        }
    }

    static func compare(_ op: ComparisonOperator, _ left: JSONValue, _ right: JSONValue) -> Bool {
        switch op {
        case .equal: return equal(left, right)
        case .notEqual: return !equal(left, right)
        default: break
        }
        let order: Int
        switch (left, right) {
        case (.int(let a), .int(let b)): order = a < b ? -1 : (a == b ? 0 : 1)
        case (.int, .double), (.double, .int), (.double, .double):
            let a = number(left)!
            let b = number(right)!
            order = a < b ? -1 : (a == b ? 0 : 1)
        case (.string(let a), .string(let b)): order = a < b ? -1 : (a == b ? 0 : 1)
        default: return false
        }
        switch op {
        case .less: return order < 0
        case .lessOrEqual: return order <= 0
        case .greater: return order > 0
        default: return order >= 0
        }
    }

    /// "a string", "an integer", ... for messages.
    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .int: "an integer"
        case .double: "a double"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
