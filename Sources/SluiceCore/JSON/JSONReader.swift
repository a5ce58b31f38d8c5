/// Parses JSON text (RFC 8259) from bytes into ``JSONValue``s: strict, allocation-light, and safe on hostile input.
///
/// - Numbers without fraction or exponent that fit in `Int64` become `.int`, all others `.double`; a number too
///   large for a `Double` is an error rather than infinity.
/// - Strings must be valid UTF-8. An escaped lone surrogate (`"\uD800"`) becomes U+FFFD.
/// - A key written twice keeps its first position and its last value, as in JavaScript and jq.
/// - Nesting deeper than ``maxDepth`` is an error, so no input can exhaust the stack.
public struct JSONReader {
    /// The deepest nesting of arrays and objects accepted.
    public static let maxDepth = 512

    /// Parses one JSON text, which may be surrounded by whitespace and nothing else.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONError) -> JSONValue {
        var reader = JSONReader(bytes)
        reader.skipWhitespace()
        guard reader.index < reader.end else { throw JSONError("expected a JSON value, found no input", at: 0) }
        let value = try reader.readValue(depth: 0)
        reader.skipWhitespace()
        guard reader.index == reader.end else {
            throw reader.error("unexpected \(reader.describeCurrent()) after the JSON value")
        }
        return value
    }

    /// Parses one JSON text held in an array or slice.
    public static func parse<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(JSONError) -> JSONValue {
        let result: Result<JSONValue, JSONError>? = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONError) -> JSONValue in try parse(buffer) }
        }
        if let result { return try result.get() }
        let copy = Array(bytes)
        return try copy.withUnsafeBufferPointer { (buffer) throws(JSONError) -> JSONValue in try parse(buffer) }
    }

    /// Parses one JSON text from a string.
    public static func parse(_ text: String) throws(JSONError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    private let base: UnsafePointer<UInt8>
    private let end: Int
    private var index = 0
    /// Reused for strings with escapes, so only the final `String` is allocated.
    private var scratch: [UInt8] = []

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        // An empty buffer may have no base address; a one-byte dummy keeps `base` valid and `end` at 0.
        base = bytes.baseAddress ?? UnsafePointer(JSONReader.emptyByte)
        end = bytes.count
    }

    private nonisolated(unsafe) static let emptyByte = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)

    // MARK: - Values

    private mutating func readValue(depth: Int) throws(JSONError) -> JSONValue {
        guard index < end else { throw error("unexpected end of input, expected a value") }
        switch base[index] {
        case UInt8(ascii: "{"): return try readObject(depth: depth + 1)
        case UInt8(ascii: "["): return try readArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"): return try readLiteral("true", .bool(true))
        case UInt8(ascii: "f"): return try readLiteral("false", .bool(false))
        case UInt8(ascii: "n"): return try readLiteral("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try readNumber()
        default: throw error("unexpected \(describeCurrent()), expected a value")
        }
    }

    private mutating func readObject(depth: Int) throws(JSONError) -> JSONValue {
        guard depth <= JSONReader.maxDepth else { throw error("nesting deeper than \(JSONReader.maxDepth) levels") }
        index += 1
        var object = JSONObject.Builder()
        skipWhitespace()
        if index < end, base[index] == UInt8(ascii: "}") {
            index += 1
            return .object(object.object)
        }
        while true {
            skipWhitespace()
            guard index < end, base[index] == UInt8(ascii: "\"") else {
                throw error("expected a string key, found \(describeCurrent())")
            }
            let key = try readString()
            skipWhitespace()
            guard index < end, base[index] == UInt8(ascii: ":") else {
                throw error("expected ':' after an object key, found \(describeCurrent())")
            }
            index += 1
            skipWhitespace()
            let value = try readValue(depth: depth)
            object.set(key, value)
            skipWhitespace()
            guard index < end else { throw error("unexpected end of input in an object") }
            let byte = base[index]
            index += 1
            if byte == UInt8(ascii: ",") { continue }
            if byte == UInt8(ascii: "}") { return .object(object.object) }
            index -= 1
            throw error("expected ',' or '}' in an object, found \(describeCurrent())")
        }
    }

    private mutating func readArray(depth: Int) throws(JSONError) -> JSONValue {
        guard depth <= JSONReader.maxDepth else { throw error("nesting deeper than \(JSONReader.maxDepth) levels") }
        index += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if index < end, base[index] == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try readValue(depth: depth))
            skipWhitespace()
            guard index < end else { throw error("unexpected end of input in an array") }
            let byte = base[index]
            index += 1
            if byte == UInt8(ascii: ",") { continue }
            if byte == UInt8(ascii: "]") { return .array(items) }
            index -= 1
            throw error("expected ',' or ']' in an array, found \(describeCurrent())")
        }
    }

    private mutating func readLiteral(_ word: StaticString, _ value: JSONValue) throws(JSONError) -> JSONValue {
        let count = word.utf8CodeUnitCount
        guard end - index >= count else { throw error("unexpected \(describeCurrent()), expected a value") }
        let word = word.utf8Start
        for offset in 0..<count where base[index + offset] != word[offset] {
            throw error("unexpected \(describeCurrent()), expected a value")
        }
        index += count
        return value
    }

    // MARK: - Strings

    private mutating func readString() throws(JSONError) -> String {
        let start = index
        index += 1
        var highBits: UInt8 = 0
        // Fast path: no escapes, so the bytes between the quotes are the string.
        while index < end {
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                let bytes = UnsafeBufferPointer(start: base + start + 1, count: index - start - 1)
                index += 1
                return try makeString(bytes, ascii: highBits < 0x80, at: start)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("unescaped control character in a string") }
            highBits |= byte
            index += 1
        }
        guard index < end else { throw JSONError("unterminated string", at: start) }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(start: base + start + 1, count: index - start - 1))
        while index < end {
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                let ascii = highBits < 0x80
                let bytes = scratch
                return try bytes.withUnsafeBufferPointer { (buffer) throws(JSONError) -> String in
                    try makeString(buffer, ascii: ascii, at: start)
                }
            }
            if byte < 0x20 { throw error("unescaped control character in a string") }
            if byte != UInt8(ascii: "\\") {
                highBits |= byte
                scratch.append(byte)
                index += 1
                continue
            }
            index += 1
            guard index < end else { break }
            let escape = base[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(escape)
            case UInt8(ascii: "b"): scratch.append(0x08)
            case UInt8(ascii: "f"): scratch.append(0x0C)
            case UInt8(ascii: "n"): scratch.append(0x0A)
            case UInt8(ascii: "r"): scratch.append(0x0D)
            case UInt8(ascii: "t"): scratch.append(0x09)
            case UInt8(ascii: "u"):
                let scalar = try readUnicodeEscape()
                if scalar.value >= 0x80 { highBits = 0x80 }
                scratch.append(contentsOf: String(Character(scalar)).utf8)
            default:
                index -= 1
                throw error("invalid escape '\\\(describeCurrent())' in a string")
            }
        }
        throw JSONError("unterminated string", at: start)
    }

    /// Reads the hex digits after `\u`, pairing surrogates; a lone surrogate becomes U+FFFD.
    private mutating func readUnicodeEscape() throws(JSONError) -> Unicode.Scalar {
        let first = try readHex4()
        if (0xD800...0xDBFF).contains(first), end - index >= 6, base[index] == UInt8(ascii: "\\"),
            base[index + 1] == UInt8(ascii: "u")
        {
            let saved = index
            index += 2
            let second = try readHex4()
            if (0xDC00...0xDFFF).contains(second) {
                let value = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                return Unicode.Scalar(value) ?? "\u{FFFD}"
            }
            index = saved
        }
        return Unicode.Scalar(first) ?? "\u{FFFD}"
    }

    private mutating func readHex4() throws(JSONError) -> UInt32 {
        guard end - index >= 4 else { throw error("incomplete \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = base[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("invalid hex digit in a \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private func makeString(_ bytes: UnsafeBufferPointer<UInt8>, ascii: Bool, at start: Int) throws(JSONError)
        -> String
    {
        if ascii { return String(decoding: bytes, as: UTF8.self) }
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw JSONError("invalid UTF-8 in a string", at: start)
        }
        return string
    }

    // MARK: - Numbers

    private mutating func readNumber() throws(JSONError) -> JSONValue {
        let start = index
        let negative = base[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < end, isDigit(base[index]) else { throw error("expected a digit in a number") }
        var mantissa: UInt64 = 0
        var digits = 0
        if base[index] == UInt8(ascii: "0") {
            index += 1
            if index < end, isDigit(base[index]) { throw error("a number may not have a leading zero") }
        } else {
            while index < end, isDigit(base[index]) {
                if digits < 19 { mantissa = mantissa &* 10 &+ UInt64(base[index] &- UInt8(ascii: "0")) }
                digits += 1
                index += 1
            }
        }
        var fractionDigits = 0
        var isInteger = true
        if index < end, base[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < end, isDigit(base[index]) else { throw error("expected a digit after '.' in a number") }
            while index < end, isDigit(base[index]) {
                if digits < 19 { mantissa = mantissa &* 10 &+ UInt64(base[index] &- UInt8(ascii: "0")) }
                if digits > 0 || base[index] != UInt8(ascii: "0") { digits += 1 }
                fractionDigits += 1
                index += 1
            }
        }
        var exponent = 0
        if index < end, base[index] | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            index += 1
            var exponentNegative = false
            if index < end, base[index] == UInt8(ascii: "+") || base[index] == UInt8(ascii: "-") {
                exponentNegative = base[index] == UInt8(ascii: "-")
                index += 1
            }
            guard index < end, isDigit(base[index]) else { throw error("expected a digit in a number's exponent") }
            while index < end, isDigit(base[index]) {
                if exponent < 100_000 { exponent = exponent * 10 + Int(base[index] &- UInt8(ascii: "0")) }
                index += 1
            }
            if exponentNegative { exponent = -exponent }
        }
        if isInteger, digits <= 19 {
            if negative, mantissa <= UInt64(Int64.max) + 1 {
                return mantissa == 0 ? .int(0) : .int(Int64(bitPattern: 0 &- mantissa))
            }
            if !negative, mantissa <= UInt64(Int64.max) { return .int(Int64(mantissa)) }
        }
        // Exact fast path: both the mantissa and the power of ten are exact doubles, so one operation rounds once.
        let scale = exponent - fractionDigits
        if digits <= 15, mantissa < (1 << 53), (-22...22).contains(scale) {
            var value = Double(mantissa)
            value = scale < 0 ? value / JSONReader.powersOfTen[-scale] : value * JSONReader.powersOfTen[scale]
            return .double(negative ? -value : value)
        }
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: index - start), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw JSONError("number \(text.prefix(40)) is out of range", at: start)
        }
        return .double(value)
    }

    private static let powersOfTen: [Double] = (0...22).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    // MARK: - Helpers

    private func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    private mutating func skipWhitespace() {
        while index < end {
            switch base[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): index += 1
            default: return
            }
        }
    }

    private func error(_ reason: String) -> JSONError { JSONError(reason, at: index) }

    /// Names the byte at the cursor for an error message: a quoted character, or its hex code when unprintable.
    private func describeCurrent() -> String {
        guard index < end else { return "end of input" }
        let byte = base[index]
        if byte >= 0x21, byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x\(byte < 0x10 ? "0" : "")\(String(byte, radix: 16, uppercase: true))"
    }
}
