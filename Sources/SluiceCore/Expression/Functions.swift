#if canImport(Glibc)
    internal import Glibc
#endif

/// The implementations of ``ExpressionFunction``; arguments arrive evaluated and counted.
enum Functions {
    static func call(_ function: ExpressionFunction, _ arguments: [JSONValue]) throws(EvaluationError) -> JSONValue {
        let name = function.rawValue
        func numberArgument(_ index: Int) throws(EvaluationError) -> Double? {
            let value = arguments[index]
            if value == .null { return nil }
            guard let number = Evaluator.number(value) else {
                throw EvaluationError("'\(name)' needs a number, found \(Evaluator.describe(value))")
            }
            return number
        }
        func stringArgument(_ index: Int) throws(EvaluationError) -> String? {
            switch arguments[index] {
            case .null: return nil
            case .string(let text): return text
            case let other: throw EvaluationError("'\(name)' needs a string, found \(Evaluator.describe(other))")
            }
        }
        func finite(_ value: Double) throws(EvaluationError) -> JSONValue {
            guard value.isFinite else { throw EvaluationError("the result of '\(name)' is not finite") }
            return .double(value)
        }

        switch function {
        case .abs:
            switch arguments[0] {
            case .int(let value):
                guard value != .min else { throw EvaluationError("integer overflow in 'abs'") }
                return .int(Swift.abs(value))
            default:
                guard let value = try numberArgument(0) else { return .null }
                return .double(Swift.abs(value))
            }
        case .round, .floor, .ceil:
            if case .int = arguments[0], arguments.count == 1 { return arguments[0] }
            guard let value = try numberArgument(0) else { return .null }
            if arguments.count == 2 {
                guard case .int(let digits) = arguments[1], (0...15).contains(digits) else {
                    throw EvaluationError("the digits of 'round' must be an integer from 0 to 15")
                }
                var scale = 1.0
                for _ in 0..<digits { scale *= 10 }
                return try finite((value * scale).rounded(.toNearestOrAwayFromZero) / scale)
            }
            let rule: FloatingPointRoundingRule =
                function == .round ? .toNearestOrAwayFromZero : (function == .floor ? .down : .up)
            let rounded = value.rounded(rule)
            guard let integer = Int64(exactly: rounded) else { return try finite(rounded) }
            return .int(integer)
        case .min, .max:
            var best: JSONValue?
            for argument in arguments where argument != .null {
                guard Evaluator.number(argument) != nil else {
                    throw EvaluationError("'\(name)' needs numbers, found \(Evaluator.describe(argument))")
                }
                if let current = best {
                    let better = Evaluator.compare(function == .min ? .less : .greater, argument, current)
                    if better { best = argument }
                } else {
                    best = argument
                }
            }
            return best ?? .null
        case .sqrt:
            guard let value = try numberArgument(0) else { return .null }
            guard value >= 0 else { throw EvaluationError("'sqrt' of a negative number") }
            return .double(value.squareRoot())
        case .pow:
            guard let base = try numberArgument(0), let exponent = try numberArgument(1) else { return .null }
            return try finite(Glibc.pow(base, exponent))
        case .length:
            switch arguments[0] {
            case .null: return .null
            case .string(let text): return .int(Int64(text.count))
            case .array(let items): return .int(Int64(items.count))
            case .object(let object): return .int(Int64(object.count))
            case let other:
                throw EvaluationError("'length' needs a string, array or object, found \(Evaluator.describe(other))")
            }
        case .lower:
            return try stringArgument(0).map { .string($0.lowercased()) } ?? .null
        case .upper:
            return try stringArgument(0).map { .string($0.uppercased()) } ?? .null
        case .trim:
            guard let text = try stringArgument(0) else { return .null }
            return .string(text.trimmingSpaces)
        case .contains:
            if case .array(let items) = arguments[0] {
                return .bool(items.contains { Evaluator.equal($0, arguments[1]) })
            }
            guard let text = try stringArgument(0), let part = try stringArgument(1) else { return .null }
            return .bool(text.utf8Contains(part))
        case .starts_with:
            guard let text = try stringArgument(0), let prefix = try stringArgument(1) else { return .null }
            return .bool(text.utf8HasPrefix(prefix))
        case .ends_with:
            guard let text = try stringArgument(0), let suffix = try stringArgument(1) else { return .null }
            return .bool(text.utf8HasSuffix(suffix))
        case .replace:
            guard let text = try stringArgument(0), let target = try stringArgument(1),
                let replacement = try stringArgument(2)
            else { return .null }
            guard !target.isEmpty else { return .string(text) }
            return .string(text.utf8Replacing(target, with: replacement))
        case .split:
            guard let text = try stringArgument(0), let separator = try stringArgument(1) else { return .null }
            guard !separator.isEmpty else { return .array(text.map { .string(String($0)) }) }
            return .array(text.utf8Split(separator).map { .string($0) })
        case .join:
            guard case .array(let items) = arguments[0] else {
                if arguments[0] == .null { return .null }
                throw EvaluationError("'join' needs an array, found \(Evaluator.describe(arguments[0]))")
            }
            guard let separator = try stringArgument(1) else { return .null }
            return .string(items.map(text(of:)).joined(separator: separator))
        case .matches, .exists, .parse_regex:
            preconditionFailure("'\(name)' is compiled to its own node.")
        case .parse_json:
            guard let text = try stringArgument(0) else { return .null }
            do {
                return try JSONReader.parse(text)
            } catch {
                throw EvaluationError("'parse_json' cannot read its string: \(error)")
            }
        case .parse_logfmt:
            guard let text = try stringArgument(0) else { return .null }
            return try LogParsers.logfmt(text)
        case .parse_key_value:
            guard let text = try stringArgument(0) else { return .null }
            let fields = arguments.count > 1 ? try stringArgument(1) ?? " " : " "
            let values = arguments.count > 2 ? try stringArgument(2) ?? "=" : "="
            return try LogParsers.keyValue(text, fieldSeparator: fields, valueSeparator: values)
        case .parse_csv:
            guard let text = try stringArgument(0) else { return .null }
            return try LogParsers.csv(text, delimiter: arguments.count > 1 ? try stringArgument(1) ?? "," : ",")
        case .parse_syslog:
            guard let text = try stringArgument(0) else { return .null }
            return try LogParsers.syslog(text, nowMillis: WallClock.nowMillis())
        case .parse_common_log, .parse_combined_log:
            guard let text = try stringArgument(0) else { return .null }
            return try LogParsers.accessLog(text, combined: function == .parse_combined_log)
        case .number:
            switch arguments[0] {
            case .int, .double, .null: return arguments[0]
            case .bool(let flag): return .int(flag ? 1 : 0)
            case .string(let text):
                let trimmed = text.trimmingSpaces
                if let value = try? JSONReader.parse(trimmed), Evaluator.number(value) != nil { return value }
                throw EvaluationError("'number' cannot read \"\(text.prefix(40))\" as a number")
            case let other: throw EvaluationError("'number' cannot convert \(Evaluator.describe(other))")
            }
        case .int:
            switch arguments[0] {
            case .int, .null: return arguments[0]
            case .bool(let flag): return .int(flag ? 1 : 0)
            case .double(let value):
                guard let integer = Int64(exactly: value.rounded(.towardZero)) else {
                    throw EvaluationError("'int' of \(value) overflows")
                }
                return .int(integer)
            case .string(let text):
                let converted = try call(.number, [.string(text)])
                return try call(.int, [converted])
            case let other: throw EvaluationError("'int' cannot convert \(Evaluator.describe(other))")
            }
        case .string:
            if arguments[0] == .null { return .null }
            return .string(text(of: arguments[0]))
        case .bool:
            switch arguments[0] {
            case .bool, .null: return arguments[0]
            case .string("true"): return .bool(true)
            case .string("false"): return .bool(false)
            case .int(let value): return .bool(value != 0)
            case .double(let value): return .bool(value != 0)
            case let other: throw EvaluationError("'bool' cannot convert \(JSONWriter.string(other).prefix(40))")
            }
        case .type:
            switch arguments[0] {
            case .null: return "null"
            case .bool: return "bool"
            case .int: return "int"
            case .double: return "double"
            case .string: return "string"
            case .array: return "array"
            case .object: return "object"
            }
        case .now:
            return .int(WallClock.nowMillis())
        case .parse_time:
            guard let text = try stringArgument(0) else { return .null }
            guard let millis = RFC3339.parse(text) else {
                throw EvaluationError("'parse_time' cannot read \"\(text.prefix(40))\" as an RFC 3339 time")
            }
            return .int(millis)
        case .distance_m:
            var values: [Double] = []
            for index in 0..<4 {
                guard let value = try numberArgument(index) else { return .null }
                values.append(value)
            }
            return .double(Geo.distanceMetres(lat1: values[0], lon1: values[1], lat2: values[2], lon2: values[3]))
        }
    }

    /// A value as text: strings as they are, anything else as compact JSON.
    static func text(of value: JSONValue) -> String {
        if case .string(let text) = value { return text }
        return JSONWriter.string(value)
    }
}

/// Great-circle geometry on a spherical Earth.
public enum Geo {
    /// The mean Earth radius, in metres (IUGG).
    public static let earthRadiusMetres = 6_371_008.8

    /// The haversine distance between two points given in degrees.
    public static func distanceMetres(lat1: Double, lon1: Double, lat2: Double, lon2: Double) -> Double {
        let radians = Double.pi / 180
        let dLat = (lat2 - lat1) * radians
        let dLon = (lon2 - lon1) * radians
        let a =
            sin(dLat / 2) * sin(dLat / 2) + cos(lat1 * radians) * cos(lat2 * radians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * earthRadiusMetres * asin(Swift.min(1, a.squareRoot()))
    }
}

extension String {
    /// The string without whitespace (Unicode's) at either end. ASCII ends are trimmed as bytes; only an end that
    /// is not ASCII takes the character-by-character way.
    var trimmingSpaces: String {
        var text = self
        // The trimmed text when both new ends are ASCII (the text itself when nothing is trimmed: the common case,
        // which must not reach the Unicode tables below); nil when one is not.
        let trimmed = text.withUTF8 { bytes -> String? in
            func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
            var start = 0
            var end = bytes.count
            while start < end, isSpace(bytes[start]) { start += 1 }
            while end > start, isSpace(bytes[end - 1]) { end -= 1 }
            guard start == end || (bytes[start] < 0x80 && bytes[end - 1] < 0x80) else { return nil }
            if start == 0, end == bytes.count { return self }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
        if let trimmed { return trimmed }
        guard let first = unicodeScalars.first, let last = unicodeScalars.last,
            first.properties.isWhitespace || last.properties.isWhitespace
        else { return self }
        return String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
