internal import SluiceRegex

/// An expression compiled to a flat list of instructions over numbered registers, run once per event.
///
/// Walking the tree cost a retain and a release of every node it passed (an indirect enum's payload is a shared
/// box), and a string comparison to find which located field a path meant. Here every instruction holds only
/// integers and operator codes, so running one copies nothing that is reference counted; a top-level field is
/// read through its slot, the index of its ``FieldLocator`` in the ``ExpressionState``; literals are operands
/// read from the constant table, never loaded. `&&`, `||`, `??` and `?:` jump, so a right side that is not needed
/// is not evaluated, as before.
///
/// A class, so that an ``Expression`` (which stages copy freely) carries one reference to it, not its tables.
final class ExpressionProgram: Sendable {
    /// Where an instruction reads a value.
    enum Operand: Sendable, Equatable {
        case register(Int)
        case constant(Int)
    }

    /// What `truth` is asked about, for the message when the value is neither a boolean nor null.
    enum TruthRole: UInt8, Sendable {
        case notOperand, leftOfAnd, rightOfAnd, leftOfOr, rightOfOr, condition

        var description: String {
            switch self {
            case .notOperand: "the operand of '!'"
            case .leftOfAnd: "the left side of '&&'"
            case .rightOfAnd: "the right side of '&&'"
            case .leftOfOr: "the left side of '||'"
            case .rightOfOr: "the right side of '||'"
            case .condition: "the condition of '?:'"
            }
        }
    }

    enum Instruction: Sendable {
        /// The top-level field of slot `slot` (`null` when missing).
        case field(into: Int, slot: Int)
        /// The value at `paths[path]` (`null` when missing).
        case path(into: Int, path: Int)
        /// Whether the top-level field of `slot`, or the value at `paths[path]`, exists.
        case fieldExists(into: Int, slot: Int)
        case pathExists(into: Int, path: Int)
        /// An array of the operands `operandLists[first..<first + count]`.
        case array(into: Int, first: Int, count: Int)
        case not(into: Int, Operand)
        case negate(into: Int, Operand)
        case arithmetic(ArithmeticOperator, into: Int, Operand, Operand)
        case compare(ComparisonOperator, into: Int, Operand, Operand)
        case contains(into: Int, Operand, list: Operand)
        /// `.bool(truth(operand))`.
        case truth(into: Int, Operand, TruthRole)
        case move(into: Int, Operand)
        case jump(to: Int)
        /// Jumps when the operand's truth is `jumpWhen` (an error when it is neither a boolean nor null).
        case branch(Operand, TruthRole, jumpWhen: Bool, to: Int)
        /// Jumps when the operand is not null.
        case jumpUnlessNull(Operand, to: Int)
        /// A function of the operands `operandLists[first..<first + count]`.
        case call(ExpressionFunction, into: Int, first: Int, count: Int)
        case regex(RegexUse, into: Int, Operand, pattern: Int)
        /// `matches` or `parse_regex` of a top-level field, on its bytes in the event's text where it can.
        case regexField(RegexUse, into: Int, slot: Int, pattern: Int)
        case parseTime(into: Int, Operand, format: Int)
        /// `contains`, `starts_with` or `ends_with` of a top-level field and a literal string, on the field's bytes
        /// in the event's text where it can.
        case fieldTest(ExpressionFunction, into: Int, slot: Int, literal: Int)
    }

    let instructions: [Instruction]
    /// The operand that holds the value once the instructions have run.
    let result: Operand
    let registerCount: Int
    let constants: [JSONValue]
    let paths: [[PathStep]]
    let patterns: [RegexPattern]
    let timeFormats: [TimeFormat]
    let operandLists: [Operand]
    /// The top-level field names, by slot.
    let fieldNames: [String]
    /// A fresh state, copied for each stage that runs the program (its locators made once).
    let initialState: ExpressionState
    /// The program on numbers and booleans, tried first, where the expression has one.
    let numeric: NumericProgram?

    /// The text the program was compiled from.
    let source: String
    /// The expression, constant-folded.
    let root: ExpressionNode
    /// The steps when the whole expression is one field path.
    let pathSteps: [PathStep]?

    init(_ root: ExpressionNode, source: String) {
        self.source = source
        self.root = root
        if case .path(let steps) = root { pathSteps = steps } else { pathSteps = nil }
        var compiler = Compiler()
        result = compiler.compile(root)
        instructions = compiler.instructions
        registerCount = compiler.registerCount
        constants = compiler.constants
        paths = compiler.paths
        patterns = compiler.patterns
        timeFormats = compiler.timeFormats
        operandLists = compiler.operandLists
        fieldNames = compiler.fieldNames
        numeric = NumericProgram(root, fieldNames: compiler.fieldNames, patterns: compiler.patterns)
        initialState = ExpressionState(
            locators: fieldNames.map(FieldLocator.init),
            registers: Array(repeating: .null, count: registerCount),
            matchers: Array(repeating: nil, count: patterns.count))
    }
}

// MARK: - Compiling

extension ExpressionProgram {
    private struct Compiler {
        var instructions: [Instruction] = []
        var registerCount = 0
        var constants: [JSONValue] = []
        var paths: [[PathStep]] = []
        var patterns: [RegexPattern] = []
        var timeFormats: [TimeFormat] = []
        var operandLists: [Operand] = []
        var fieldNames: [String] = []

        mutating func register() -> Int {
            registerCount += 1
            return registerCount - 1
        }

        mutating func constant(_ value: JSONValue) -> Operand {
            constants.append(value)
            return .constant(constants.count - 1)
        }

        mutating func slot(_ name: String) -> Int {
            if let slot = fieldNames.firstIndex(of: name) { return slot }
            fieldNames.append(name)
            return fieldNames.count - 1
        }

        mutating func path(_ steps: [PathStep]) -> Int {
            paths.append(steps)
            return paths.count - 1
        }

        /// Emits `make(register)` and returns the register it writes.
        mutating func emit(_ make: (Int) -> Instruction) -> Operand {
            let into = register()
            instructions.append(make(into))
            return .register(into)
        }

        /// Compiles `nodes` and lists their operands for an array or a call; returns where the list starts.
        mutating func list(_ nodes: [ExpressionNode]) -> Int {
            let operands = nodes.map { compile($0) }
            operandLists += operands
            return operandLists.count - operands.count
        }

        /// A jump to be aimed once its target is known.
        mutating func placeholder() -> Int {
            instructions.append(.jump(to: -1))
            return instructions.count - 1
        }

        mutating func aim(_ index: Int, _ jump: (Int) -> Instruction) {
            instructions[index] = jump(instructions.count)
        }

        mutating func compile(_ node: ExpressionNode) -> Operand {
            switch node {
            case .literal(let value):
                return constant(value)
            case .path(let steps):
                if steps.count == 1, case .key(let name) = steps[0] {
                    let slot = slot(name)
                    return emit { .field(into: $0, slot: slot) }
                }
                let path = path(steps)
                return emit { .path(into: $0, path: path) }
            case .exists(let steps):
                if steps.count == 1, case .key(let name) = steps[0] {
                    let slot = slot(name)
                    return emit { .fieldExists(into: $0, slot: slot) }
                }
                let path = path(steps)
                return emit { .pathExists(into: $0, path: path) }
            case .array(let items):
                let first = list(items)
                return emit { .array(into: $0, first: first, count: items.count) }
            case .not(let operand):
                let value = compile(operand)
                return emit { .not(into: $0, value) }
            case .negate(let operand):
                let value = compile(operand)
                return emit { .negate(into: $0, value) }
            case .arithmetic(let op, let left, let right):
                let (a, b) = (compile(left), compile(right))
                return emit { .arithmetic(op, into: $0, a, b) }
            case .compare(let op, let left, let right):
                let (a, b) = (compile(left), compile(right))
                return emit { .compare(op, into: $0, a, b) }
            case .contains(let item, let list):
                let (value, items) = (compile(item), compile(list))
                return emit { .contains(into: $0, value, list: items) }
            case .regex(let use, let subject, let pattern):
                patterns.append(pattern)
                let index = patterns.count - 1
                if case .path(let steps) = subject, steps.count == 1, case .key(let name) = steps[0] {
                    let slot = slot(name)
                    return emit { .regexField(use, into: $0, slot: slot, pattern: index) }
                }
                let value = compile(subject)
                return emit { .regex(use, into: $0, value, pattern: index) }
            case .parseTime(let subject, let format):
                let value = compile(subject)
                timeFormats.append(format)
                let index = timeFormats.count - 1
                return emit { .parseTime(into: $0, value, format: index) }
            case .call(let function, let arguments):
                if let (field, literal) = ExpressionNode.fieldTest(function, arguments) {
                    let slot = slot(field)
                    constants.append(.string(literal))
                    let part = constants.count - 1
                    return emit { .fieldTest(function, into: $0, slot: slot, literal: part) }
                }
                let first = list(arguments)
                return emit { .call(function, into: $0, first: first, count: arguments.count) }
            case .and(let left, let right):
                return shortCircuit(left, right, leftRole: .leftOfAnd, rightRole: .rightOfAnd, decidedBy: false)
            case .or(let left, let right):
                return shortCircuit(left, right, leftRole: .leftOfOr, rightRole: .rightOfOr, decidedBy: true)
            case .coalesce(let left, let right):
                let into = register()
                let value = compile(left)
                instructions.append(.move(into: into, value))
                let skip = placeholder()
                let fallback = compile(right)
                instructions.append(.move(into: into, fallback))
                aim(skip) { .jumpUnlessNull(value, to: $0) }
                return .register(into)
            case .conditional(let condition, let then, let otherwise):
                let into = register()
                let test = compile(condition)
                let toElse = placeholder()
                let thenValue = compile(then)
                instructions.append(.move(into: into, thenValue))
                let toEnd = placeholder()
                aim(toElse) { .branch(test, .condition, jumpWhen: false, to: $0) }
                let elseValue = compile(otherwise)
                instructions.append(.move(into: into, elseValue))
                aim(toEnd) { .jump(to: $0) }
                return .register(into)
            }
        }

        /// `&&` (decided by a false left side) and `||` (by a true one): the right side runs only when needed.
        mutating func shortCircuit(
            _ left: ExpressionNode, _ right: ExpressionNode, leftRole: TruthRole, rightRole: TruthRole,
            decidedBy decided: Bool
        ) -> Operand {
            let into = register()
            let value = compile(left)
            let toDecided = placeholder()
            let rightValue = compile(right)
            instructions.append(.truth(into: into, rightValue, rightRole))
            let toEnd = placeholder()
            aim(toDecided) { .branch(value, leftRole, jumpWhen: decided, to: $0) }
            let decidedValue = constant(.bool(decided))
            instructions.append(.move(into: into, decidedValue))
            aim(toEnd) { .jump(to: $0) }
            return .register(into)
        }
    }
}

// MARK: - Running

/// What a program reads its fields from: a parsed value, or an event that may still hold its text.
protocol FieldSource {
    /// The top-level field `locator` names.
    func field(_ locator: inout FieldLocator) -> JSONValue?
    /// The top-level field `locator` names when it is a number or a boolean.
    func scalar(_ locator: inout FieldLocator) -> Scalar?
    func lookup(_ steps: [PathStep]) -> JSONValue?
    /// See ``Event/withPlainString(_:_:)``.
    func withPlainString<Result>(_ locator: inout FieldLocator, _ body: (UnsafeRawBufferPointer) -> Result) -> Result?
    /// Calls `body` with the source as an event, which the numeric program reads.
    func withEvent<Result>(_ body: (Event) -> Result) -> Result
}

extension JSONValue: FieldSource {
    func field(_ locator: inout FieldLocator) -> JSONValue? {
        guard case .object(let object) = self else { return nil }
        return object[locator.name]
    }

    func scalar(_ locator: inout FieldLocator) -> Scalar? { field(&locator).flatMap(Scalar.init) }

    func withPlainString<Result>(_ locator: inout FieldLocator, _ body: (UnsafeRawBufferPointer) -> Result)
        -> Result?
    { nil }

    func lookup(_ steps: [PathStep]) -> JSONValue? { Evaluator.lookup(steps, in: self) }

    func withEvent<Result>(_ body: (Event) -> Result) -> Result { body(Event(self)) }
}

extension Event: FieldSource {
    func field(_ locator: inout FieldLocator) -> JSONValue? { lookup(&locator) }

    func withEvent<Result>(_ body: (Event) -> Result) -> Result { body(self) }
}

extension ExpressionProgram {
    /// The value of the program for `source`, with the registers, locators and argument list of `state`.
    func run<Source: FieldSource>(_ source: Source, _ state: inout ExpressionState) throws(EvaluationError)
        -> JSONValue
    {
        // Called through the optional where it is: `if let` would copy the program, and so retain and release
        // its closures' context, at every event.
        if numeric != nil, let value = source.withEvent({ numeric?.run($0, &state) ?? nil }) { return value }
        return try runGeneral(source, &state)
    }

    /// ``run(_:_:)`` without trying the numeric program first.
    func runGeneral<Source: FieldSource>(_ source: Source, _ state: inout ExpressionState) throws(EvaluationError)
        -> JSONValue
    {
        // Registers keep their last values between runs: each is written before it is read in every run. The tables
        // are read through locals: one retain a run, where reading a class's arrays retains them at every access.
        let instructions = instructions
        let constants = constants
        func read(_ operand: Operand) -> JSONValue {
            switch operand {
            case .register(let index): state.registers[index]
            case .constant(let index): constants[index]
            }
        }
        var pc = 0
        while pc < instructions.count {
            switch instructions[pc] {
            case .field(let into, let slot):
                state.registers[into] = source.field(&state.locators[slot]) ?? .null
            case .path(let into, let path):
                state.registers[into] = source.lookup(paths[path]) ?? .null
            case .fieldExists(let into, let slot):
                state.registers[into] = .bool(source.field(&state.locators[slot]) != nil)
            case .pathExists(let into, let path):
                state.registers[into] = .bool(source.lookup(paths[path]) != nil)
            case .array(let into, let first, let count):
                state.registers[into] = .array((first..<first + count).map { read(operandLists[$0]) })
            case .not(let into, let operand):
                state.registers[into] = .bool(
                    !(try Evaluator.truth(read(operand), TruthRole.notOperand.description)))
            case .negate(let into, let operand):
                state.registers[into] = try Evaluator.negate(read(operand))
            case .arithmetic(let op, let into, let left, let right):
                state.registers[into] = try Evaluator.arithmetic(op, read(left), read(right))
            case .compare(let op, let into, let left, let right):
                state.registers[into] = .bool(Evaluator.compare(op, read(left), read(right)))
            case .contains(let into, let item, let list):
                state.registers[into] = try Evaluator.contains(read(item), in: read(list))
            case .truth(let into, let operand, let role):
                state.registers[into] = .bool(try Evaluator.truth(read(operand), role.description))
            case .move(let into, let operand):
                state.registers[into] = read(operand)
            case .jump(let target):
                pc = target
                continue
            case .branch(let operand, let role, let jumpWhen, let target):
                if try Evaluator.truth(read(operand), role.description) == jumpWhen {
                    pc = target
                    continue
                }
            case .jumpUnlessNull(let operand, let target):
                if read(operand) != .null {
                    pc = target
                    continue
                }
            case .fieldTest(let function, let into, let slot, let literal):
                let found = source.withPlainString(&state.locators[slot]) { bytes in
                    guard case .string(let part) = constants[literal] else { return false }
                    return StringBytes.test(function, bytes, part)
                }
                if let found {
                    state.registers[into] = .bool(found)
                } else {
                    state.arguments.removeAll(keepingCapacity: true)
                    state.arguments.append(source.field(&state.locators[slot]) ?? .null)
                    state.arguments.append(constants[literal])
                    state.registers[into] = try Functions.call(function, state.arguments)
                }
            case .call(let function, let into, let first, let count):
                state.arguments.removeAll(keepingCapacity: true)
                for index in first..<first + count { state.arguments.append(read(operandLists[index])) }
                state.registers[into] = try Functions.call(function, state.arguments)
            case .regex(let use, let into, let subject, let pattern):
                let matcher = state.matcher(pattern, of: patterns)
                state.registers[into] = try Evaluator.regex(use, read(subject), matcher)
            case .regexField(let use, let into, let slot, let pattern):
                let matcher = state.matcher(pattern, of: patterns)
                let outcome = source.withPlainString(&state.locators[slot]) { bytes in
                    Result { () throws(EvaluationError) in try Evaluator.regex(use, bytes, matcher) }
                }
                if let outcome {
                    state.registers[into] = try outcome.get()
                } else {
                    state.registers[into] = try Evaluator.regex(
                        use, source.field(&state.locators[slot]) ?? .null, matcher)
                }
            case .parseTime(let into, let subject, let format):
                state.registers[into] = try Evaluator.parseTime(read(subject), timeFormats[format])
            }
            pc += 1
        }
        return read(result)
    }
}
