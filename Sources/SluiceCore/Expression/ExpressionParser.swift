internal import SluiceRegex

/// Turns expression text into an ``ExpressionNode`` tree, by precedence climbing over Swift's operator order:
/// unary `!` `-`; `*` `/` `%`; `+` `-`; `??`; comparisons and `in`; `&&`; `||`; `?:`.
struct ExpressionParser {
    /// Limits that keep every recursive walk of the tree (parse, fold, evaluate) far from the end of a thread's
    /// stack, whatever the text: 3,000 opening parentheses overflowed it (found by `scripts/fuzz expression`).
    static let maxDepth = 32
    static let maxOperands = 256

    private let text: [Unicode.Scalar]
    private var index = 0
    /// Operands parsed so far, and operands being parsed now (the nesting depth): every operand of every operator,
    /// and every parenthesis, list and argument, passes through ``parseUnary()``.
    private var operands = 0
    private var depth = 0

    init(_ text: String) {
        self.text = Array(text.unicodeScalars)
    }

    static func parse(_ text: String) throws(ExpressionError) -> ExpressionNode {
        var parser = ExpressionParser(text)
        parser.skipSpace()
        guard parser.index < parser.text.count else {
            throw ExpressionError("empty expression", at: 0, note: "write an expression such as .temperature > 30")
        }
        let node = try parser.parseConditional()
        parser.skipSpace()
        guard parser.index == parser.text.count else { throw parser.unexpected() }
        return node
    }

    // MARK: - Precedence levels

    private mutating func parseConditional() throws(ExpressionError) -> ExpressionNode {
        let condition = try parseOr()
        guard consume("?") else { return condition }
        let then = try parseConditional()
        guard consume(":") else { throw expected("':' of the conditional expression") }
        let otherwise = try parseConditional()
        return .conditional(condition, then: then, else: otherwise)
    }

    private mutating func parseOr() throws(ExpressionError) -> ExpressionNode {
        var left = try parseAnd()
        while consume("||") { left = .or(left, try parseAnd()) }
        return left
    }

    private mutating func parseAnd() throws(ExpressionError) -> ExpressionNode {
        var left = try parseComparison()
        while consume("&&") { left = .and(left, try parseComparison()) }
        return left
    }

    private mutating func parseComparison() throws(ExpressionError) -> ExpressionNode {
        let left = try parseCoalesce()
        skipSpace()
        for op in [ComparisonOperator.equal, .notEqual, .lessOrEqual, .greaterOrEqual, .less, .greater] {
            if consume(op.rawValue) {
                let right = try parseCoalesce()
                if peekComparison() {
                    throw ExpressionError("comparisons cannot be chained", at: index, note: "join them with && instead")
                }
                return .compare(op, left, right)
            }
        }
        if consumeWord("in") { return .contains(left, list: try parseCoalesce()) }
        return left
    }

    private mutating func peekComparison() -> Bool {
        skipSpace()
        let rest = String(String.UnicodeScalarView(text[index...].prefix(2)))
        return ["==", "!=", "<=", ">="].contains(rest) || rest.hasPrefix("<") || rest.hasPrefix(">")
    }

    private mutating func parseCoalesce() throws(ExpressionError) -> ExpressionNode {
        var left = try parseAdditive()
        while consume("??") { left = .coalesce(left, try parseAdditive()) }
        return left
    }

    private mutating func parseAdditive() throws(ExpressionError) -> ExpressionNode {
        var left = try parseMultiplicative()
        while true {
            if consume("+") {
                left = .arithmetic(.add, left, try parseMultiplicative())
            } else if consume("-") {
                left = .arithmetic(.subtract, left, try parseMultiplicative())
            } else {
                return left
            }
        }
    }

    private mutating func parseMultiplicative() throws(ExpressionError) -> ExpressionNode {
        var left = try parseUnary()
        while true {
            if consume("*") {
                left = .arithmetic(.multiply, left, try parseUnary())
            } else if consume("/") {
                left = .arithmetic(.divide, left, try parseUnary())
            } else if consume("%") {
                left = .arithmetic(.remainder, left, try parseUnary())
            } else {
                return left
            }
        }
    }

    private mutating func parseUnary() throws(ExpressionError) -> ExpressionNode {
        operands += 1
        depth += 1
        defer { depth -= 1 }
        if depth > Self.maxDepth {
            throw ExpressionError(
                "the expression is nested more than \(Self.maxDepth) levels deep", at: index,
                note: "split it over several map or filter stages")
        }
        if operands > Self.maxOperands {
            throw ExpressionError(
                "the expression has more than \(Self.maxOperands) operands", at: index,
                note: "split it over several map or filter stages")
        }
        skipSpace()
        if peek("!"), !peek("!=") {
            index += 1
            return .not(try parseUnary())
        }
        if consume("-") {
            let operand = try parseUnary()
            // Negative literals are folded now, so they cost nothing per event.
            if case .literal(.int(let value)) = operand { return .literal(.int(-value)) }
            if case .literal(.double(let value)) = operand { return .literal(.double(-value)) }
            return .negate(operand)
        }
        return try parsePrimary()
    }

    // MARK: - Primaries

    private mutating func parsePrimary() throws(ExpressionError) -> ExpressionNode {
        skipSpace()
        guard index < text.count else { throw expected("an expression") }
        let start = index
        let scalar = text[index]
        switch scalar {
        case "(":
            index += 1
            let inner = try parseConditional()
            guard consume(")") else { throw expected("')'") }
            return inner
        case "[":
            index += 1
            var items: [ExpressionNode] = []
            if consume("]") { return .array(items) }
            repeat { items.append(try parseConditional()) } while consume(",")
            guard consume("]") else { throw expected("',' or ']' in the list") }
            return .array(items)
        case "\"":
            return .literal(.string(try parseString()))
        case ".":
            return .path(try parsePath())
        case "0"..."9":
            return .literal(try parseNumber())
        default:
            guard isIdentifierStart(scalar) else { throw unexpected() }
            let name = parseIdentifier()
            switch name {
            case "true": return .literal(.bool(true))
            case "false": return .literal(.bool(false))
            case "null": return .literal(.null)
            default: return try parseCall(name, at: start)
            }
        }
    }

    private mutating func parseCall(_ name: String, at start: Int) throws(ExpressionError) -> ExpressionNode {
        skipSpace()
        guard let function = ExpressionFunction(rawValue: name) else {
            let suggestion = Suggestion.closest(to: name, among: ExpressionFunction.allCases.map(\.rawValue))
            if peek("(") {
                throw ExpressionError(
                    "unknown function '\(name)'", at: start,
                    note: suggestion.map { "did you mean '\($0)'?" } ?? "see the README for the list of functions")
            }
            throw ExpressionError(
                "unknown name '\(name)'", at: start,
                note: "fields are written with a leading dot, as in .\(name)")
        }
        guard consume("(") else { throw expected("'(' after '\(name)'") }
        var arguments: [ExpressionNode] = []
        var argumentStarts: [Int] = []
        if !consume(")") {
            repeat {
                skipSpace()
                argumentStarts.append(index)
                arguments.append(try parseConditional())
            } while consume(",")
            guard consume(")") else { throw expected("',' or ')' in the call to '\(name)'") }
        }
        guard function.arity.contains(arguments.count) else {
            throw ExpressionError(
                "'\(name)' takes \(function.arityDescription), found \(arguments.count)", at: start)
        }
        switch function {
        case .exists:
            guard case .path(let steps) = arguments[0] else {
                throw ExpressionError("'exists' needs a path such as .field", at: argumentStarts[0])
            }
            return .exists(steps)
        case .matches, .parse_regex:
            guard case .literal(.string(let pattern)) = arguments[1] else {
                throw ExpressionError("the pattern of '\(name)' must be a string literal", at: argumentStarts[1])
            }
            let compiled: RegexPattern
            do {
                compiled = try RegexPattern(pattern)
            } catch {
                throw ExpressionError(
                    "invalid regular expression: \(error.message)", at: argumentStarts[1],
                    note: "at byte \(error.byteOffset) of the pattern (PCRE2 syntax)")
            }
            if function == .parse_regex, compiled.namedGroups.isEmpty {
                throw ExpressionError(
                    "the pattern of 'parse_regex' has no named groups", at: argumentStarts[1],
                    note: "name what to capture, as in (?<level>[A-Z]+)")
            }
            return .regex(function == .matches ? .matches : .captures, arguments[0], compiled)
        case .parse_time where arguments.count == 2:
            guard case .literal(.string(let format)) = arguments[1] else {
                throw ExpressionError("the format of 'parse_time' must be a string literal", at: argumentStarts[1])
            }
            do {
                return .parseTime(arguments[0], try TimeFormat(format))
            } catch {
                throw ExpressionError(error.reason, at: argumentStarts[1])
            }
        default:
            return .call(function, arguments)
        }
    }

    private mutating func parsePath() throws(ExpressionError) -> [PathStep] {
        var steps: [PathStep] = []
        var first = true
        while index < text.count {
            if text[index] == "." {
                let dot = index
                index += 1
                if index < text.count, isIdentifierStart(text[index]) {
                    steps.append(.key(parseIdentifier()))
                } else if index < text.count, text[index] == "\"" {
                    steps.append(.key(try parseString()))
                } else if first {
                    // `.` alone is the whole event; `.[0]` indexes it.
                } else {
                    index = dot
                    throw expected("a field name after '.'")
                }
            } else if text[index] == "[" {
                index += 1
                skipSpace()
                let negative = consume("-")
                skipSpace()
                guard index < text.count, ("0"..."9").contains(text[index]),
                    case .int(let value) = try parseNumber()
                else { throw expected("an integer index") }
                guard consume("]") else { throw expected("']'") }
                steps.append(.index(negative ? -Int(value) : Int(value)))
            } else {
                break
            }
            first = false
        }
        return steps
    }

    private mutating func parseIdentifier() -> String {
        let start = index
        while index < text.count, isIdentifierStart(text[index]) || ("0"..."9").contains(text[index]) { index += 1 }
        return String(String.UnicodeScalarView(text[start..<index]))
    }

    private mutating func parseString() throws(ExpressionError) -> String {
        let start = index
        index += 1
        var raw = "\""
        while index < text.count {
            let scalar = text[index]
            raw.unicodeScalars.append(scalar)
            index += 1
            if scalar == "\\" {
                guard index < text.count else { break }
                raw.unicodeScalars.append(text[index])
                index += 1
            } else if scalar == "\"" {
                // The string is JSON, so the JSON reader decodes its escapes.
                do {
                    guard case .string(let value) = try JSONReader.parse(raw) else { break }
                    return value
                } catch {
                    throw ExpressionError("invalid string literal: \(error.reason)", at: start)
                }
            }
        }
        throw ExpressionError("unterminated string", at: start)
    }

    private mutating func parseNumber() throws(ExpressionError) -> JSONValue {
        let start = index
        while index < text.count,
            ("0"..."9").contains(text[index]) || [".", "e", "E"].contains(text[index])
                || ((text[index] == "+" || text[index] == "-") && ["e", "E"].contains(text[index - 1]))
        {
            index += 1
        }
        let literal = String(String.UnicodeScalarView(text[start..<index]))
        do {
            return try JSONReader.parse(literal)
        } catch {
            throw ExpressionError("invalid number '\(literal)'", at: start)
        }
    }

    // MARK: - Scanning

    private func isIdentifierStart(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || scalar == "_"
    }

    private mutating func skipSpace() {
        while index < text.count,
            text[index] == " " || text[index] == "\t" || text[index] == "\n"
                || text[index] == "\r"
        {
            index += 1
        }
    }

    private mutating func peek(_ token: String) -> Bool {
        skipSpace()
        let scalars = Array(token.unicodeScalars)
        guard index + scalars.count <= text.count else { return false }
        return Array(text[index..<index + scalars.count]) == scalars
    }

    /// Consumes `token` if it comes next; never takes the first character of a longer operator.
    private mutating func consume(_ token: String) -> Bool {
        guard peek(token) else { return false }
        let next = index + token.unicodeScalars.count
        if next < text.count {
            let following = text[next]
            switch token {
            case "<", ">", "!": if following == "=" { return false }
            case "=": return false
            case "?": if following == "?" { return false }
            case "|", "&": return false
            default: break
            }
        }
        index = next
        return true
    }

    private mutating func consumeWord(_ word: String) -> Bool {
        guard peek(word) else { return false }
        let next = index + word.unicodeScalars.count
        if next < text.count, isIdentifierStart(text[next]) || ("0"..."9").contains(text[next]) { return false }
        index = next
        return true
    }

    private mutating func expected(_ what: String) -> ExpressionError {
        skipSpace()
        guard index < text.count else { return ExpressionError("expected \(what), found the end", at: index) }
        return ExpressionError("expected \(what), found '\(text[index])'", at: index)
    }

    private mutating func unexpected() -> ExpressionError {
        skipSpace()
        guard index < text.count else { return ExpressionError("unexpected end of the expression", at: index) }
        return ExpressionError("unexpected '\(text[index])'", at: index)
    }
}
