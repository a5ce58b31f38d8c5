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
struct NumericProgram: Sendable {
    /// Where an instruction reads a value: a register, or a literal held in the instruction itself.
    enum Operand: Sendable {
        case register(Int)
        case constant(Scalar)
    }

    enum Instruction: Sendable {
        /// The number or boolean in the top-level field of slot `slot` (the general program's slots).
        case field(into: Int, slot: Int)
        case not(into: Int, Operand)
        case negate(into: Int, Operand)
        case arithmetic(ArithmeticOperator, into: Int, Operand, Operand)
        case compare(ComparisonOperator, into: Int, Operand, Operand)
        /// Writes the operand's truth (it must be a boolean).
        case truth(into: Int, Operand)
        case move(into: Int, Operand)
        case jump(to: Int)
        /// Jumps when the operand, which must be a boolean, is `jumpWhen`.
        case branch(Operand, jumpWhen: Bool, to: Int)
        /// `contains`, `starts_with` or `ends_with` of the string in the top-level field of `slot` (written without
        /// escapes) and `literals[start..<start + count]`, whose least common byte is at `anchor`.
        case fieldTest(ExpressionFunction, into: Int, slot: Int, start: Int, count: Int, anchor: Int)
        /// `matches` of the string in the top-level field of `slot` (written without escapes) and the general
        /// program's pattern `pattern`, with the state's match data for it.
        case fieldMatch(into: Int, slot: Int, pattern: Int)
    }

    let instructions: [Instruction]
    let registerCount: Int
    let result: Operand
    /// The bytes of the string literals that fields are tested against, one after another.
    let literals: [UInt8]

    /// The numeric form of `root`, or `nil` when it has a part the numeric program does not cover. A top-level
    /// field's slot is its index in `fieldNames`, and a pattern's number its index in `patterns`, as in the general
    /// program.
    init?(_ root: ExpressionNode, fieldNames: [String], patterns: [RegexPattern]) {
        // A bare field is read with one lookup, whatever it holds.
        if case .path = root { return nil }
        var compiler = Compiler(fieldNames: fieldNames, patterns: patterns)
        guard let result = compiler.compile(root), compiler.readsAField else { return nil }
        instructions = compiler.instructions
        registerCount = compiler.registerCount
        literals = compiler.literals
        self.result = result
    }

    private struct Compiler {
        let fieldNames: [String]
        let patterns: [RegexPattern]
        var instructions: [Instruction] = []
        var registerCount = 0
        var readsAField = false
        var literals: [UInt8] = []

        mutating func register() -> Int {
            registerCount += 1
            return registerCount - 1
        }

        mutating func emit(_ make: (Int) -> Instruction) -> Operand {
            let into = register()
            instructions.append(make(into))
            return .register(into)
        }

        mutating func placeholder() -> Int {
            instructions.append(.jump(to: -1))
            return instructions.count - 1
        }

        /// Where `node`'s value will be, or `nil` when `node` is not covered.
        mutating func compile(_ node: ExpressionNode) -> Operand? {
            switch node {
            case .literal(let value):
                return Scalar(value).map { .constant($0) }
            case .path(let steps):
                guard steps.count == 1, case .key(let name) = steps[0], let slot = fieldNames.firstIndex(of: name)
                else { return nil }
                readsAField = true
                return emit { .field(into: $0, slot: slot) }
            case .not(let operand):
                guard let value = compile(operand) else { return nil }
                return emit { .not(into: $0, value) }
            case .negate(let operand):
                guard let value = compile(operand) else { return nil }
                return emit { .negate(into: $0, value) }
            case .arithmetic(let op, let left, let right):
                guard let a = compile(left), let b = compile(right) else { return nil }
                return emit { .arithmetic(op, into: $0, a, b) }
            case .compare(let op, let left, let right):
                guard let a = compile(left), let b = compile(right) else { return nil }
                return emit { .compare(op, into: $0, a, b) }
            case .and(let left, let right):
                return shortCircuit(left, right, decidedBy: false)
            case .or(let left, let right):
                return shortCircuit(left, right, decidedBy: true)
            case .coalesce(let left, _):
                // The left side is never null here (null is not a scalar: the run gives up), so it is the value.
                return compile(left)
            case .conditional(let condition, let then, let otherwise):
                guard let test = compile(condition) else { return nil }
                let into = register()
                let toElse = placeholder()
                guard let thenValue = compile(then) else { return nil }
                instructions.append(.move(into: into, thenValue))
                let toEnd = placeholder()
                instructions[toElse] = .branch(test, jumpWhen: false, to: instructions.count)
                guard let elseValue = compile(otherwise) else { return nil }
                instructions.append(.move(into: into, elseValue))
                instructions[toEnd] = .jump(to: instructions.count)
                return .register(into)
            case .call(let function, let arguments):
                guard let (name, part) = ExpressionNode.fieldTest(function, arguments),
                    let slot = fieldNames.firstIndex(of: name)
                else { return nil }
                readsAField = true
                let start = literals.count
                literals += Array(part.utf8)
                let anchor = literals[start...].withUnsafeBufferPointer { StringBytes.rarestByte($0) }
                let count = literals.count - start
                return emit { .fieldTest(function, into: $0, slot: slot, start: start, count: count, anchor: anchor) }
            case .regex(.matches, .path(let steps), let pattern):
                guard steps.count == 1, case .key(let name) = steps[0], let slot = fieldNames.firstIndex(of: name),
                    let index = patterns.firstIndex(where: { $0 === pattern })
                else { return nil }
                readsAField = true
                return emit { .fieldMatch(into: $0, slot: slot, pattern: index) }
            case .array, .contains, .exists, .regex, .parseTime:
                return nil
            }
        }

        /// `&&` and `||`: the right side runs only when the left does not decide, as in the general program.
        mutating func shortCircuit(_ left: ExpressionNode, _ right: ExpressionNode, decidedBy decided: Bool)
            -> Operand?
        {
            guard let value = compile(left) else { return nil }
            let into = register()
            let toDecided = placeholder()
            guard let rightValue = compile(right) else { return nil }
            instructions.append(.truth(into: into, rightValue))
            let toEnd = placeholder()
            instructions[toDecided] = .branch(value, jumpWhen: decided, to: instructions.count)
            instructions.append(.move(into: into, .constant(.bool(decided))))
            instructions[toEnd] = .jump(to: instructions.count)
            return .register(into)
        }
    }
}

// MARK: - Running

extension NumericProgram {
    /// The value for `source`, or `nil` when this event needs the general program; `state` gives the field
    /// locators and the match data of `patterns` (the general program's).
    func run<Source: FieldSource>(_ source: Source, _ state: inout ExpressionState, patterns: [RegexPattern])
        -> JSONValue?
    {
        literals.withUnsafeBufferPointer { literals in
            withUnsafeTemporaryAllocation(of: Scalar.self, capacity: registerCount) { registers -> JSONValue? in
                // Scalars are trivial: a register is written by plain assignment before it is read.
                guard let registers = registers.baseAddress else { return nil }
                @inline(__always) func read(_ operand: Operand) -> Scalar {
                    switch operand {
                    case .register(let index): registers[index]
                    case .constant(let value): value
                    }
                }
                var pc = 0
                while pc < instructions.count {
                    switch instructions[pc] {
                    case .field(let into, let slot):
                        guard let value = source.scalar(&state.locators[slot]) else { return nil }
                        registers[into] = value
                    case .not(let into, let operand):
                        guard case .bool(let flag) = read(operand) else { return nil }
                        registers[into] = .bool(!flag)
                    case .negate(let into, let operand):
                        switch read(operand) {
                        case .int(let number) where number != .min: registers[into] = .int(-number)
                        case .double(let number): registers[into] = .double(-number)
                        default: return nil
                        }
                    case .arithmetic(let op, let into, let left, let right):
                        guard let value = Self.arithmetic(op, read(left), read(right)) else { return nil }
                        registers[into] = value
                    case .compare(let op, let into, let left, let right):
                        registers[into] = .bool(Self.compare(op, read(left), read(right)))
                    case .truth(let into, let operand):
                        let value = read(operand)
                        guard case .bool = value else { return nil }
                        registers[into] = value
                    case .move(let into, let operand):
                        registers[into] = read(operand)
                    case .jump(let target):
                        pc = target
                        continue
                    case .branch(let operand, let jumpWhen, let target):
                        guard case .bool(let flag) = read(operand) else { return nil }
                        if flag == jumpWhen {
                            pc = target
                            continue
                        }
                    case .fieldTest(let function, let into, let slot, let start, let count, let anchor):
                        let part = UnsafeBufferPointer(rebasing: literals[start..<start + count])
                        guard
                            let found = source.withPlainString(
                                &state.locators[slot],
                                { text in
                                    StringBytes.test(function, text, part, anchor: anchor)
                                })
                        else { return nil }
                        registers[into] = .bool(found)
                    case .fieldMatch(let into, let slot, let pattern):
                        let matcher = state.matcher(pattern, of: patterns)
                        // A field that is not a plain string, or a match PCRE2 gave up on: the general program says.
                        guard
                            case .some(.some(let found)) = source.withPlainString(
                                &state.locators[slot], { bytes in try? matcher.matches(bytes) })
                        else { return nil }
                        registers[into] = .bool(found)
                    }
                    pc += 1
                }
                return read(result).value
            }
        }
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
