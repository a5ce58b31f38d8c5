internal import SluiceCore

/// Fuzz target for the reading of fields from events' text, as stages read them event after event.
///
/// Input: an expression, a newline, then events, one JSON text a line. Each line is decoded as a source decodes
/// it (one scanner kept from line to line), and every reading a stage makes of it with state kept from event to
/// event (each field looked for first where it was in the last event, a time's minute remembered) must agree
/// with the same reading of the parsed value, or give `nil` where the stage then evaluates the field: the
/// expression by its general program and, as a filter runs it, by its numeric program first; a field's number,
/// plain string, null-ness and time; the hashes a key is made of, of one field and of several (`dedupe`,
/// `throttle`, `sample`, the aggregate's groups); a field a map appends. The fields read are the first object's
/// top-level keys (at most three).
func fuzzStream(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) else { return 0 }
    let source = String(decoding: bytes[..<newline], as: UTF8.self)
    // `now()` and `parse_syslog` (which takes the current year) give another value at each call: not compared.
    let expression = source.contains("now") || source.contains("parse_syslog") ? nil : try? Expression(source)
    var general = expression?.makeState()
    var filter = expression?.makeState()
    let code = expression?.numericCode
    var scanner = CanonicalJSONScanner()
    var fields: [ReadField]?
    var key: [FieldLocator] = []
    for line in bytes[(newline + 1)...].split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
        let text = UnsafeBufferPointer(rebasing: line)
        guard let value = try? JSONReader.parse(text) else { continue }
        let event: Event
        do {
            event = try EventDecoding.json.decodeEvent(text, scanner: &scanner, ingestNanos: 0)
        } catch {
            preconditionFailure("a line that parses was not decoded: \(error)")
        }
        precondition(event.value == value, "the decoded event is not the line's value")
        if let expression { checkExpression(expression, code, event, value, &general!, &filter!) }
        guard case .object(let object) = value else { continue }
        if fields == nil {
            fields = object.fields.prefix(3).map { ReadField($0.key) }
            key = fields!.map { FieldLocator($0.name) }
        }
        for index in fields!.indices { fields![index].check(event, object) }
        checkKey(&key, fields!.map(\.name), event, object)
    }
    return 0
}

/// The expression on `event` with each stage's state, against its value on `value` with a fresh one.
private func checkExpression(
    _ expression: Expression, _ code: NumericCode?, _ event: Event, _ value: JSONValue,
    _ general: inout ExpressionState, _ filter: inout ExpressionState
) {
    let expected = written { () throws(EvaluationError) in try expression.evaluate(value) }
    let read = written { () throws(EvaluationError) in try expression.evaluate(event, &general) }
    precondition(
        read == expected, "evaluated on the event's text: \(read ?? "error"), on its value: \(expected ?? "error")")
    if let scalar = code?.run(event, &filter) {
        let numeric = written { scalar.value }
        precondition(
            numeric == expected, "the numeric program gave \(numeric ?? "error"), the value \(expected ?? "error")")
    } else {
        let fallback = written { () throws(EvaluationError) in try expression.evaluateByGeneralProgram(event, &filter) }
        precondition(fallback == expected, "after the numeric program: \(fallback ?? "error"), \(expected ?? "error")")
    }
}

/// One field read as stages read it, each way with a locator of its own kept from event to event.
private struct ReadField {
    let name: String
    var scalar: FieldLocator
    var string: FieldLocator
    var null: FieldLocator
    var time: FieldLocator
    var hashes: FieldLocator
    var append: FieldLocator

    init(_ name: String) {
        self.name = name
        (scalar, string, null, time, hashes, append) = (
            .init(name), .init(name), .init(name), .init(name), .init(name), .init(name)
        )
    }

    /// Reads the field of `event` each way, against `object`, the event's value.
    mutating func check(_ event: Event, _ object: JSONObject) {
        let name = name
        let expected = object.fields.first { $0.key == name }?.value
        if let number = event.scalar(&scalar) {
            precondition(
                expected.flatMap(Scalar.init).map { expected in written { expected.value } }
                    == written { number.value },
                "the number read for '\(name)' differs from the value's")
        }
        if let contents = event.withPlainString(&string, { Array($0) }) {
            guard case .string(let expected)? = expected else { preconditionFailure("'\(name)' read as a string") }
            precondition(contents == Array(expected.utf8), "the string read for '\(name)' differs from the value's")
        }
        if let missing = event.isNullOrMissing(&null) {
            precondition(
                missing == (expected == nil || expected == .null), "'\(name)' read as null or missing: \(missing)")
        }
        // A time read from the text (`nil`: the caller evaluates the field), remembering its minute or afresh.
        let millis: Int64? =
            switch expected {
            case .int(let millis)?: millis
            case .string(let time)?: RFC3339.parse(time)
            default: nil
            }
        for read in [event.epochMillis(&time), event.epochMillis(at: [.key(name)])] {
            if let read { precondition(read == millis, "the time read for '\(name)' is \(read), not \(millis ?? 0)") }
        }
        let seed: UInt64 = 0x5EED
        if let read = event.valueTextHashes(&hashes, followedBy: 10, secondSeed: seed) {
            var bytes: [UInt8] = []
            JSONWriter.write(expected ?? .null, to: &bytes)
            let reference = bytes.withUnsafeBytes { StableHash.pair($0, followedBy: 10, secondSeed: seed) }
            precondition(expected != nil && read == reference, "the key hashed from the text of '\(name)' differs")
        }
        var appended = event
        if appended.appendField(&append, scalar: .int(7)) {
            precondition(expected == nil, "'\(name)' was appended though the event has it")
            let reference = JSONValue.object(
                JSONObject(uniqueFields: object.fields + [JSONObject.Field(key: name, value: .int(7))]))
            precondition(appended.value == reference, "appending '\(name)' gave \(appended.value)")
        }
    }
}

/// The hashes of a key of several fields read from `event`'s text, against those of the values written out.
private func checkKey(_ locators: inout [FieldLocator], _ names: [String], _ event: Event, _ object: JSONObject) {
    guard
        let read = locators.withUnsafeMutableBufferPointer({
            event.absorbValueTexts($0, followedBy: 10, into: StableHash.sequenceSeed)
        })
    else { return }
    var reference = StableHash.sequenceSeed
    for name in names {
        guard let value = object.fields.first(where: { $0.key == name })?.value else {
            preconditionFailure("a key with '\(name)', which the event lacks, was hashed from its text")
        }
        var bytes: [UInt8] = []
        JSONWriter.write(value, to: &bytes)
        reference = bytes.withUnsafeBytes { StableHash.absorb(reference, $0, followedBy: 10) }
    }
    precondition(read == reference, "the key of \(names) hashed from the text differs")
}

/// The JSON text of what `body` gives, or `nil` where it throws.
private func written(_ body: () throws(EvaluationError) -> JSONValue) -> String? {
    (try? body()).map(JSONWriter.string)
}
