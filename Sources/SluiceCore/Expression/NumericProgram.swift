internal import SluiceRegex

/// A number or a boolean: what the numeric program computes with. It holds nothing reference counted, so copying
/// one is copying bytes.
package enum Scalar: Sendable, Equatable {
    case int(Int64)
    case double(Double)
    case bool(Bool)

    package init?(_ value: JSONValue) {
        switch value {
        case .int(let number): self = .int(number)
        case .double(let number): self = .double(number)
        case .bool(let flag): self = .bool(flag)
        default: return nil
        }
    }

    package var value: JSONValue {
        switch self {
        case .int(let number): .int(number)
        case .double(let number): .double(number)
        case .bool(let flag): .bool(flag)
        }
    }

    package var number: Double? {
        switch self {
        case .int(let number): Double(number)
        case .double(let number): number
        case .bool: nil
        }
    }
}

/// The commonest expressions, `.temperature > 30`, `.temp * 9 / 5 + 32`, `.a > 1 && .b < 2`,
/// `contains(.message, " ERROR ")`, `matches(.message, "(?i)error")`, compiled a second time to run on ``Scalar``s:
/// numbers and booleans read from top-level fields straight from an event's text, and string fields tested or
/// matched there in place, with no ``JSONValue`` built, copied or released on the way.
///
/// It covers only the cases where the result is a number or a boolean and nothing can go wrong; anything else
/// (a field that is missing, null or a string, integer overflow, division by zero, a non-boolean condition) makes
/// ``run(_:_:)`` return `nil`, and the caller runs the general ``ExpressionProgram``, which gives the same value or
/// the error with its message. The expressions have no side effects, so running the general one after a partial
/// numeric run changes nothing.
///
/// Each node is compiled to a closure that calls its operands' closures, each always from the same place. An
/// interpreter's loop over instructions, before it, took an indirect jump for every instruction, to a different
/// place each time, mispredicted most of the time: on a filter of three comparisons the expression's own share of
/// the samples fell from 7.5 to 4.8 % with the closures.
struct NumericProgram: Sendable {
    /// A compiled node: its value for the event, with the field locators and match data of the state; `nil` where
    /// the general program must answer.
    typealias Code = @Sendable (Event, inout ExpressionState) -> Scalar?

    /// The compiled root, in an object of its own so that a list of programs can call it without taking a
    /// reference (``SharedNumericPrograms``).
    final class Compiled: Sendable {
        let code: Code

        init(_ code: @escaping Code) { self.code = code }
    }

    let compiled: Compiled

    /// The numeric form of `root`, or `nil` when it has a part the numeric program does not cover. A top-level
    /// field's slot is its index in `fieldNames`, and a pattern's number its index in `patterns`, as in the general
    /// program.
    init?(_ root: ExpressionNode, fieldNames: [String], patterns: [RegexPattern]) {
        var fieldNames = fieldNames
        var patterns = patterns
        self.init(root, fieldNames: &fieldNames, patterns: &patterns, sharing: false)
    }

    /// The numeric form of `root` with the slots of `fieldNames` and `patterns`, to which it adds those it reads and
    /// they lack; `sharing`, when programs run one after another on an event through one state, each field's number
    /// read once per event (``SharedNumericPrograms``).
    init?(_ root: ExpressionNode, fieldNames: inout [String], patterns: inout [RegexPattern], sharing: Bool) {
        // A bare field is read with one lookup, whatever it holds.
        if case .path = root { return nil }
        var compiler = Compiler(fieldNames: fieldNames, patterns: patterns, sharing: sharing)
        guard let code = compiler.compile(root), compiler.readsAField else { return nil }
        compiled = Compiled(code)
        fieldNames = compiler.fieldNames
        patterns = compiler.patterns
    }

    /// The value for `event`, or `nil` when this event needs the general program.
    func run(_ event: Event, _ state: inout ExpressionState) -> JSONValue? {
        compiled.code(event, &state)?.value
    }

    private struct Compiler {
        var fieldNames: [String]
        var patterns: [RegexPattern]
        let sharing: Bool
        var readsAField = false

        /// The slot of a one-key path (a new one, when sharing, for a name not yet read).
        mutating func slot(_ steps: [PathStep]) -> Int? {
            guard steps.count == 1, case .key(let name) = steps[0] else { return nil }
            if sharing, !fieldNames.contains(name) { fieldNames.append(name) }
            guard let slot = fieldNames.firstIndex(of: name) else { return nil }
            readsAField = true
            return slot
        }

        /// The number of a pattern (a new one, when sharing, for a pattern not yet used).
        mutating func patternIndex(_ pattern: RegexPattern) -> Int? {
            if sharing, !patterns.contains(where: { $0 === pattern }) { patterns.append(pattern) }
            return patterns.firstIndex { $0 === pattern }
        }

        /// The code for `node`, or `nil` when `node` is not covered.
        mutating func compile(_ node: ExpressionNode) -> Code? {
            switch node {
            case .literal(let value):
                guard let scalar = Scalar(value) else { return nil }
                return { _, _ in scalar }
            case .path(let steps):
                guard let slot = slot(steps) else { return nil }
                let sharing = sharing
                return { event, state in NumericProgram.scalar(slot, of: event, &state, sharing: sharing) }
            case .not(let operand):
                guard let value = compile(operand) else { return nil }
                return { event, state in
                    guard case .bool(let flag)? = value(event, &state) else { return nil }
                    return .bool(!flag)
                }
            case .negate(let operand):
                guard let value = compile(operand) else { return nil }
                return { event, state in
                    switch value(event, &state) {
                    case .int(let number)? where number != .min: .int(-number)
                    case .double(let number)?: .double(-number)
                    default: nil
                    }
                }
            case .arithmetic(let op, let left, .literal(let literal)):
                guard let constant = Scalar(literal) else { return nil }
                if let (base, steps) = Self.chain(op, left, constant) {
                    guard let value = compile(base) else { return nil }
                    return Self.arithmeticChain(value, steps)
                }
                guard let value = compile(left) else { return nil }
                return Self.arithmetic(op, value, constant)
            case .arithmetic(let op, let left, let right):
                guard let a = compile(left), let b = compile(right) else { return nil }
                return { event, state in
                    guard let x = a(event, &state), let y = b(event, &state) else { return nil }
                    return NumericProgram.arithmetic(op, x, y)
                }
            case .compare(let op, .path(let steps), .literal(let literal)) where op == .equal || op == .notEqual:
                return equality(op == .equal, steps, literal)
            case .compare(let op, .literal(let literal), .path(let steps)) where op == .equal || op == .notEqual:
                return equality(op == .equal, steps, literal)
            case .compare(let op, .path(let steps), .literal(let literal)):
                guard let constant = Scalar(literal) else { return nil }
                return field(steps, op, constant)
            case .compare(let op, let left, let right):
                guard let a = compile(left), let b = compile(right) else { return nil }
                return { event, state in
                    guard let x = a(event, &state), let y = b(event, &state) else { return nil }
                    return .bool(NumericProgram.compare(op, x, y))
                }
            case .and(let left, let right):
                return shortCircuit(left, right, decidedBy: false)
            case .or(let left, let right):
                return shortCircuit(left, right, decidedBy: true)
            case .coalesce(let left, _):
                // The left side is never null here (null is not a scalar: the run gives up), so it is the value.
                return compile(left)
            case .conditional(let condition, let then, let otherwise):
                guard let test = compile(condition), let thenValue = compile(then),
                    let elseValue = compile(otherwise)
                else { return nil }
                return { event, state in
                    guard case .bool(let flag)? = test(event, &state) else { return nil }
                    return flag ? thenValue(event, &state) : elseValue(event, &state)
                }
            case .call(let function, let arguments):
                guard let (name, part) = ExpressionNode.fieldTest(function, arguments),
                    let slot = slot([.key(name)])
                else { return nil }
                let literal = Array(part.utf8)
                let anchor = literal.withUnsafeBufferPointer { StringBytes.rarestByte($0) }
                return { event, state in
                    literal.withUnsafeBufferPointer { part in
                        event.withPlainString(&state.locators[slot]) { text in
                            StringBytes.test(function, text, part, anchor: anchor)
                        }.map { .bool($0) }
                    }
                }
            case .regex(.matches, .path(let steps), let pattern):
                guard let index = patternIndex(pattern), let slot = slot(steps) else { return nil }
                let patterns = patterns
                return { event, state in
                    let matcher = state.matcher(index, of: patterns)
                    // A field that is not a plain string, or a match PCRE2 gave up on: the general program says.
                    guard
                        case .some(.some(let found)) = event.withPlainString(
                            &state.locators[slot], { bytes in try? matcher.matches(bytes) })
                    else { return nil }
                    return .bool(found)
                }
            case .array, .contains, .exists, .regex, .parseTime:
                return nil
            }
        }

        /// A value and a number, the commonest arithmetic (`.temp * 9 / 5 + 32`): the number is not a call of its
        /// own, and the operator is chosen here, once, instead of for every event (5 of a map's 125 ns). Hence five
        /// closures alike but for the operator: one closure capturing it, switched on per event, measured 4 ns slower.
        static func arithmetic(_ op: ArithmeticOperator, _ value: @escaping Code, _ constant: Scalar) -> Code {
            switch op {
            case .add:
                return { event, state in
                    value(event, &state).flatMap { NumericProgram.arithmetic(.add, $0, constant) }
                }
            case .subtract:
                return { event, state in
                    value(event, &state).flatMap { NumericProgram.arithmetic(.subtract, $0, constant) }
                }
            case .multiply:
                return { event, state in
                    value(event, &state).flatMap { NumericProgram.arithmetic(.multiply, $0, constant) }
                }
            case .divide:
                return { event, state in
                    value(event, &state).flatMap { NumericProgram.arithmetic(.divide, $0, constant) }
                }
            case .remainder:
                return { event, state in
                    value(event, &state).flatMap { NumericProgram.arithmetic(.remainder, $0, constant) }
                }
            }
        }

        /// Two or more operations with a number in a row (`.temp * 9 / 5 + 32`): the value they start from and the
        /// operations in order; `nil` for one, and where a number is not one (a boolean) or divides by zero, which
        /// ``arithmetic(_:_:_:)`` takes one by one.
        static func chain(_ op: ArithmeticOperator, _ left: ExpressionNode, _ constant: Scalar)
            -> (base: ExpressionNode, steps: [(ArithmeticOperator, Scalar)])?
        {
            var steps = [(op, constant)]
            var base = left
            while case .arithmetic(let inner, let operand, .literal(let literal)) = base, let number = Scalar(literal) {
                steps.insert((inner, number), at: 0)
                base = operand
            }
            let usable = steps.allSatisfy { op, constant in
                guard let number = constant.number else { return false }
                return number != 0 || (op != .divide && op != .remainder)
            }
            return steps.count >= 2 && usable ? (base, steps) : nil
        }

        /// A ``chain(_:_:_:)`` in one closure. From a double every step is a double operation, and only the end is
        /// checked for being finite: a step's non-finite result stays so through the steps after it (each with a
        /// finite, non-zero divisor), so this is what checking each step gives. From an integer, step by step.
        static func arithmeticChain(_ value: @escaping Code, _ steps: [(ArithmeticOperator, Scalar)]) -> Code {
            let numbers = steps.map { op, constant in (op, constant.number!) }
            return { event, state in
                guard let start = value(event, &state) else { return nil }
                if case .double(var number) = start {
                    for index in numbers.indices {
                        let (op, constant) = numbers[index]
                        switch op {
                        case .add: number += constant
                        case .subtract: number -= constant
                        case .multiply: number *= constant
                        case .divide: number /= constant
                        case .remainder: number = number.truncatingRemainder(dividingBy: constant)
                        }
                    }
                    return number.isFinite ? .double(number) : nil
                }
                var result = start
                for index in steps.indices {
                    guard let next = NumericProgram.arithmetic(steps[index].0, result, steps[index].1) else {
                        return nil
                    }
                    result = next
                }
                return result
            }
        }

        /// `==` (`equal`) or `!=` of a top-level field and a literal: a number or boolean as any comparison, and also
        /// `null` and a string of ASCII, tested in place in the event's text (so `.level == "error"` and
        /// `.temperature != null` make no value).
        mutating func equality(_ equal: Bool, _ steps: [PathStep], _ literal: JSONValue) -> Code? {
            switch literal {
            case .null:
                guard let slot = slot(steps) else { return nil }
                return { event, state in event.isNullOrMissing(&state.locators[slot]).map { .bool($0 == equal) } }
            case .string(let string):
                let bytes = Array(string.utf8)
                guard bytes.allSatisfy({ $0 < 0x80 }), let slot = slot(steps) else { return nil }
                return { event, state in
                    bytes.withUnsafeBufferPointer { bytes in
                        event.equalsASCII(&state.locators[slot], bytes, string).map { .bool($0 == equal) }
                    }
                }
            default:
                guard let constant = Scalar(literal) else { return nil }
                return field(steps, equal ? .equal : .notEqual, constant)
            }
        }

        /// A top-level field compared with a number or a boolean, the commonest condition, in one closure.
        mutating func field(_ steps: [PathStep], _ op: ComparisonOperator, _ constant: Scalar) -> Code? {
            guard let slot = slot(steps) else { return nil }
            let sharing = sharing
            return { event, state in
                guard let value = NumericProgram.scalar(slot, of: event, &state, sharing: sharing) else { return nil }
                return .bool(NumericProgram.compare(op, value, constant))
            }
        }

        /// `&&` and `||`: the right side runs only when the left does not decide, as in the general program; both
        /// must be booleans.
        mutating func shortCircuit(_ left: ExpressionNode, _ right: ExpressionNode, decidedBy decided: Bool)
            -> Code?
        {
            guard let a = compile(left), let b = compile(right) else { return nil }
            return { event, state in
                guard case .bool(let flag)? = a(event, &state) else { return nil }
                if flag == decided { return .bool(decided) }
                guard case .bool(let other)? = b(event, &state) else { return nil }
                return .bool(other)
            }
        }
    }
}

// MARK: - Rules

extension NumericProgram {
    /// The number or boolean in field `slot` of `event`: found in the event's text each time, or, where programs
    /// share `state`, once per event and then kept (slots from 64 are found each time).
    @inline(__always)
    static func scalar(_ slot: Int, of event: Event, _ state: inout ExpressionState, sharing: Bool) -> Scalar? {
        guard sharing, slot < 64 else { return event.scalar(&state.locators[slot]) }
        let bit: UInt64 = 1 << UInt64(slot)
        if state.scalarsRead & bit != 0 { return state.scalars[slot] }
        let value = event.scalar(&state.locators[slot])
        state.scalars[slot] = value
        state.scalarsRead |= bit
        return value
    }

    /// As ``Evaluator/arithmetic(_:_:_:)``; `nil` where that throws.
    @inline(__always)
    private static func arithmetic(_ op: ArithmeticOperator, _ left: Scalar, _ right: Scalar) -> Scalar? {
        if case .int(let a) = left, case .int(let b) = right {
            let result: (partialValue: Int64, overflow: Bool)
            switch op {
            case .add: result = a.addingReportingOverflow(b)
            case .subtract: result = a.subtractingReportingOverflow(b)
            case .multiply: result = a.multipliedReportingOverflow(by: b)
            case .divide: return b == 0 ? nil : .double(Double(a) / Double(b))
            case .remainder:
                guard b != 0 else { return nil }
                result = a.remainderReportingOverflow(dividingBy: b)
            }
            return result.overflow ? nil : .int(result.partialValue)
        }
        guard let a = left.number, let b = right.number, let result = op.apply(a, b) else { return nil }
        return .double(result)
    }

    /// As ``Evaluator/compare(_:_:_:)``.
    @inline(__always)
    private static func compare(_ op: ComparisonOperator, _ left: Scalar, _ right: Scalar) -> Bool {
        let order: Int
        switch (left, right) {
        case (.int(let a), .int(let b)): order = a < b ? -1 : (a == b ? 0 : 1)
        case (.bool(let a), .bool(let b)):
            switch op {
            case .equal: return a == b
            case .notEqual: return a != b
            default: return false
            }
        case (.bool, _), (_, .bool):
            // Values of different types are not equal and have no order.
            return op == .notEqual
        default:
            let a = left.number!
            let b = right.number!
            order = a < b ? -1 : (a == b ? 0 : 1)
        }
        switch op {
        case .equal: return order == 0
        case .notEqual: return order != 0
        case .less: return order < 0
        case .lessOrEqual: return order <= 0
        case .greater: return order > 0
        case .greaterOrEqual: return order >= 0
        }
    }
}

/// An expression's numeric program, called with no reference counted: a closure loaded from an array or an object
/// to be called is retained and released around the call (a map paid 5 ns an event, a route more). Valid only while
/// the ``Expression`` it came from lives, which its holder keeps.
package struct NumericCode: Sendable {
    private let compiled: Unmanaged<NumericProgram.Compiled>

    init(_ compiled: NumericProgram.Compiled) { self.compiled = Unmanaged.passUnretained(compiled) }

    /// The number or boolean for `event`, or `nil` when this event needs the general program.
    package func run(_ event: Event, _ state: inout ExpressionState) -> Scalar? {
        compiled._withUnsafeGuaranteedRef { $0.code(event, &state) }
    }
}

/// The numeric programs of several expressions that run one after another on each event, reading their top-level
/// fields through one state: a field that several of them read (a route's `.temperature > 30` and
/// `.temperature <= 30`) is found once per event, where each program alone would look for it again, and its number
/// parsed once. An expression without a numeric program, and an event a program gives up on, take the expression's
/// general program (``Expression/evaluateByGeneralProgram(_:_:)``) with a state of their own.
package struct SharedNumericPrograms: Sendable {
    /// The programs, which keep their code alive as long as this lives.
    private let programs: [NumericProgram?]
    /// The same code, unretained (`programs` holds every one of it).
    private let code: [NumericCode?]
    private let initialState: ExpressionState

    /// The programs of `expressions`, in order.
    package init(_ expressions: [Expression]) {
        var fieldNames: [String] = []
        var patterns: [RegexPattern] = []
        programs = expressions.map {
            NumericProgram($0.root, fieldNames: &fieldNames, patterns: &patterns, sharing: true)
        }
        code = programs.map { $0.map { NumericCode($0.compiled) } }
        var state = ExpressionState(
            locators: fieldNames.map(FieldLocator.init), registers: [],
            matchers: Array(repeating: nil, count: patterns.count))
        state.scalars = Array(repeating: nil, count: fieldNames.count)
        initialState = state
    }

    /// A fresh state for a stage that runs the programs.
    package func makeState() -> ExpressionState { initialState }

    /// Forgets the numbers read for the last event; called before the programs run on the next.
    package func begin(_ state: inout ExpressionState) { state.scalarsRead = 0 }

    /// The value of expression `index` for `event` by its numeric program; `nil` where it has none or gives up.
    package func run(_ index: Int, _ event: Event, _ state: inout ExpressionState) -> JSONValue? {
        code[index]?.run(event, &state)?.value
    }
}
