/// A text template such as `"{.device} {.temperature}°C"`: literal text with expressions in braces (`{{` and
/// `}}` for literal braces), compiled once. Strings are inserted as they are, other values as compact JSON.
public struct Template: Sendable {
    private enum Part: Sendable {
        case text(String)
        case expression(Expression)
    }

    private let parts: [Part]

    /// Compiles `source`; errors carry the character offset within the template.
    public init(_ source: String) throws(ExpressionError) {
        let scalars = Array(source.unicodeScalars)
        var parts: [Part] = []
        var literal = ""
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            let next = index + 1 < scalars.count ? scalars[index + 1] : nil
            if scalar == "{" && next == "{" || scalar == "}" && next == "}" {
                literal.unicodeScalars.append(scalar)
                index += 2
            } else if scalar == "{" {
                guard let close = scalars[(index + 1)...].firstIndex(of: "}") else {
                    throw ExpressionError(
                        "unclosed '{' in the template", at: index, note: "write {{ for a literal brace")
                }
                let inner = String(String.UnicodeScalarView(scalars[(index + 1)..<close]))
                do {
                    parts.append(.text(literal))
                    literal = ""
                    parts.append(.expression(try Expression(inner)))
                } catch {
                    throw ExpressionError(error.message, at: index + 1 + error.offset, note: error.note)
                }
                index = close + 1
            } else if scalar == "}" {
                throw ExpressionError("unmatched '}' in the template", at: index, note: "write }} for a literal brace")
            } else {
                literal.unicodeScalars.append(scalar)
                index += 1
            }
        }
        parts.append(.text(literal))
        self.parts = parts.filter {
            if case .text(let text) = $0 { return !text.isEmpty }
            return true
        }
    }

    /// The text, when the template has no expression: the same for every event.
    public var constantText: String? {
        var text = ""
        for part in parts {
            guard case .text(let literal) = part else { return nil }
            text += literal
        }
        return text
    }

    /// Appends the rendered text for `event` to `output`.
    public func render(_ event: JSONValue, to output: inout [UInt8]) throws(EvaluationError) {
        try render(to: &output) { (expression) throws(EvaluationError) in try expression.evaluate(event) }
    }

    /// Appends the rendered text for `event` to `output`, reading its fields from its text when it still has one.
    public func render(_ event: Event, to output: inout [UInt8]) throws(EvaluationError) {
        try render(to: &output) { (expression) throws(EvaluationError) in try expression.evaluate(event) }
    }

    private func render(
        to output: inout [UInt8], _ evaluate: (Expression) throws(EvaluationError) -> JSONValue
    ) throws(EvaluationError) {
        for part in parts {
            switch part {
            case .text(let text): output.append(contentsOf: text.utf8)
            case .expression(let expression):
                let value = try evaluate(expression)
                if case .string(let text) = value {
                    output.append(contentsOf: text.utf8)
                } else {
                    JSONWriter.write(value, to: &output)
                }
            }
        }
    }

    /// The rendered text for `event`.
    public func render(_ event: JSONValue) throws(EvaluationError) -> String {
        var output: [UInt8] = []
        try render(event, to: &output)
        return String(decoding: output, as: UTF8.self)
    }
}
