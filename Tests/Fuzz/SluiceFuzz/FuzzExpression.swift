internal import SluiceCore

/// Events every compiled expression is evaluated against, besides the one the input may carry.
private let sampleEvents: [JSONValue] = [
    object([
        ("temp", .double(31.5)), ("device", .string("dev-7")), ("count", .int(Int64.max)),
        ("tags", .array([.string("a"), .int(-1), .null])),
        ("pos", object([("lat", .double(52.5)), ("lon", .double(13.4))])),
    ]),
    .null, .int(Int64.min), .string(""), .array([]),
]

private func object(_ fields: [(String, JSONValue)]) -> JSONValue {
    .object(JSONObject(uniqueFields: fields.map { JSONObject.Field(key: $0.0, value: $0.1) }))
}

/// Fuzz target for the expression and template compilers and the evaluator.
///
/// Input: an expression, optionally followed by a newline and a JSON event. Compiling either succeeds or throws
/// an `ExpressionError` whose offset lies inside the text; evaluating either gives a value or throws an
/// `EvaluationError`: never a trap, whatever the operands (overflow, division by zero, deep nesting).
func fuzzExpression(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
    let source = String(decoding: bytes[..<newline], as: UTF8.self)
    var events = sampleEvents
    if newline < bytes.endIndex,
        let event = try? JSONReader.parse(UnsafeBufferPointer(rebasing: bytes[(newline + 1)...]))
    {
        events.append(event)
    }
    do {
        let expression = try Expression(source)
        for event in events { _ = try? expression.evaluate(event) }
    } catch {
        precondition(
            error.offset >= 0 && error.offset <= source.unicodeScalars.count, "offset \(error.offset) outside \(source)"
        )
    }
    if let template = try? Template(source) {
        for event in events { _ = try? template.render(event) }
    }
    return 0
}
