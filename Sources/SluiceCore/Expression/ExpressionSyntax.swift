internal import SluiceRegex

/// A step of a path: an object key or an array index (negative counts from the end).
public enum PathStep: Sendable, Hashable {
    /// An object key.
    case key(String)
    /// An array index (negative counts from the end).
    case index(Int)
}

/// A compiled expression's tree. Evaluation walks it directly; nothing is parsed per event.
indirect enum ExpressionNode: Sendable {
    case literal(JSONValue)
    case path([PathStep])
    case array([ExpressionNode])
    case not(ExpressionNode)
    case negate(ExpressionNode)
    case arithmetic(ArithmeticOperator, ExpressionNode, ExpressionNode)
    case compare(ComparisonOperator, ExpressionNode, ExpressionNode)
    case contains(ExpressionNode, list: ExpressionNode)
    case coalesce(ExpressionNode, ExpressionNode)
    case and(ExpressionNode, ExpressionNode)
    case or(ExpressionNode, ExpressionNode)
    case conditional(ExpressionNode, then: ExpressionNode, else: ExpressionNode)
    case call(ExpressionFunction, [ExpressionNode])
    case exists([PathStep])
    /// `matches` or `parse_regex` of a subject and a pattern compiled (PCRE2, JIT) at load; each stage matches
    /// with its own matcher.
    case regex(RegexUse, ExpressionNode, RegexPattern)
    /// `parse_time` of a subject with a format compiled at load.
    case parseTime(ExpressionNode, TimeFormat)

    var isLiteral: Bool { literalValue != nil }

    /// For `contains`, `starts_with` or `ends_with` of a top-level field and a string literal (the call both
    /// programs test on the field's bytes in the event's text): the field's name and the literal.
    static func fieldTest(_ function: ExpressionFunction, _ arguments: [ExpressionNode]) -> (
        field: String, literal: String
    )? {
        guard [.contains, .starts_with, .ends_with].contains(function), arguments.count == 2,
            case .path(let steps) = arguments[0], steps.count == 1, case .key(let name) = steps[0],
            case .literal(.string(let literal)) = arguments[1]
        else { return nil }
        return (name, literal)
    }

    var literalValue: JSONValue? {
        if case .literal(let value) = self { return value }
        return nil
    }
}

/// What a regular expression is for: whether it matches, or the object of its named groups.
enum RegexUse: Sendable {
    case matches
    case captures

    var functionName: String { self == .matches ? "matches" : "parse_regex" }
}

enum ArithmeticOperator: String, Sendable {
    case add = "+"
    case subtract = "-"
    case multiply = "*"
    case divide = "/"
    case remainder = "%"

    var verb: String {
        switch self {
        case .add: "add"
        case .subtract: "subtract"
        case .multiply: "multiply"
        case .divide: "divide"
        case .remainder: "take the remainder of"
        }
    }
}

extension ArithmeticOperator {
    /// `a op b` on doubles; `nil` when dividing by zero or when the result is not finite.
    @inline(__always)
    func apply(_ a: Double, _ b: Double) -> Double? {
        let result: Double
        switch self {
        case .add: result = a + b
        case .subtract: result = a - b
        case .multiply: result = a * b
        case .divide:
            guard b != 0 else { return nil }
            result = a / b
        case .remainder:
            guard b != 0 else { return nil }
            result = a.truncatingRemainder(dividingBy: b)
        }
        return result.isFinite ? result : nil
    }
}

enum ComparisonOperator: String, Sendable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
}

/// Why an expression did not compile, at a character offset within its text.
public struct ExpressionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    /// The character (Unicode scalar) offset within the expression, from 0.
    public let offset: Int
    /// What was expected, if there is something useful to say.
    public let note: String?

    /// A syntax error with `message` at character `offset` of the expression, and an optional `note`.
    public init(_ message: String, at offset: Int, note: String? = nil) {
        self.message = message
        self.offset = offset
        self.note = note
    }

    /// The message (the offset is in ``offset``).
    public var description: String { message }
}
