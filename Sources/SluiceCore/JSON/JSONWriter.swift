/// Writes ``JSONValue``s as compact JSON bytes, appending to a caller-owned buffer so that a sink can encode a
/// whole batch into one reused allocation.
///
/// Strings are escaped as RFC 8259 requires (quote, backslash, control characters) and otherwise written as UTF-8;
/// doubles use Swift's shortest representation that reads back to the same value.
public enum JSONWriter {
    /// Appends the compact JSON text of `value` to `output`.
    public static func write(_ value: JSONValue, to output: inout [UInt8]) {
        switch value {
        case .null: append("null", to: &output)
        case .bool(let flag): append(flag ? "true" : "false", to: &output)
        case .int(let number): writeInteger(number, to: &output)
        case .double(let number): writeDouble(number, to: &output)
        case .string(let string): writeString(string, to: &output)
        case .array(let items):
            output.append(UInt8(ascii: "["))
            for (position, item) in items.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                write(item, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            output.append(UInt8(ascii: "{"))
            for (position, field) in object.fields.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                writeString(field.key, to: &output)
                output.append(UInt8(ascii: ":"))
                write(field.value, to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// The compact JSON text of `value` as a string.
    public static func string(_ value: JSONValue) -> String {
        var output: [UInt8] = []
        write(value, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends `string` as a quoted, escaped JSON string.
    public static func writeString(_ string: String, to output: inout [UInt8]) {
        var string = string
        string.withUTF8 { writeString(utf8: $0, to: &output) }
    }

    /// Writes valid UTF-8 `bytes` as a JSON string, escaping what JSON requires.
    static func writeString(utf8 bytes: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        if needsNoEscape(bytes) {
            output.append(contentsOf: bytes)
        } else {
            var clean = 0
            for position in bytes.indices {
                let byte = bytes[position]
                guard byte < 0x20 || byte == 0x22 || byte == 0x5C else { continue }
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[clean..<position]))
                appendEscape(byte, to: &output)
                clean = position + 1
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[clean...]))
        }
        output.append(UInt8(ascii: "\""))
    }

    /// True when `bytes` is ASCII (so valid UTF-8), tested eight bytes at a time.
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let raw = UnsafeRawBufferPointer(bytes)
        var offset = 0
        var seen: UInt64 = 0
        while raw.count - offset >= 8 {
            seen |= raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        while offset < raw.count {
            seen |= UInt64(raw[offset])
            offset += 1
        }
        return seen & 0x8080_8080_8080_8080 == 0
    }

    /// True when no byte of `bytes` needs an escape in a JSON string (a control character, `"` or `\\`).
    static func needsNoEscape(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard var position = bytes.baseAddress else { return true }
        let end = position + bytes.count
        while true {
            // Stops at the next byte that needs an escape, or is not ASCII (which needs none).
            position = PlainBytes.skip(from: position, to: end)
            if position == end { return true }
            if position.pointee < 0x80 { return false }
            position += 1
        }
    }

    private static func appendEscape(_ byte: UInt8, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\\"))
        switch byte {
        case 0x22: output.append(0x22)
        case 0x5C: output.append(0x5C)
        case 0x08: output.append(UInt8(ascii: "b"))
        case 0x0C: output.append(UInt8(ascii: "f"))
        case 0x0A: output.append(UInt8(ascii: "n"))
        case 0x0D: output.append(UInt8(ascii: "r"))
        case 0x09: output.append(UInt8(ascii: "t"))
        default:
            let hex: StaticString = "0123456789abcdef"
            output.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
            output.append(hex.utf8Start[Int(byte >> 4)])
            output.append(hex.utf8Start[Int(byte & 0xF)])
        }
    }

    private static func writeInteger(_ number: Int64, to output: inout [UInt8]) {
        if number < 0 { output.append(UInt8(ascii: "-")) }
        var magnitude = number.magnitude
        // 20 digits hold UInt64.max; digits are produced backwards into a fixed tuple-free scratch.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var count = 0
            repeat {
                digits[19 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            output.append(contentsOf: UnsafeBufferPointer(rebasing: digits[(20 - count)...]))
        }
    }

    private static func writeDouble(_ number: Double, to output: inout [UInt8]) {
        // Values are finite by construction (the reader rejects overflow); `null` guards any that are not.
        guard number.isFinite else { return append("null", to: &output) }
        guard let (digits, fractionDigits) = shortDecimal(number.magnitude) else {
            return output.append(contentsOf: number.description.utf8)
        }
        // What `description` writes, without making a String: `digits` with the point `fractionDigits` from the
        // right, and `.0` for a whole number.
        if number < 0 { output.append(UInt8(ascii: "-")) }
        var scale: UInt64 = 1
        for _ in 0..<fractionDigits { scale *= 10 }
        writeInteger(Int64(digits / scale), to: &output)
        output.append(UInt8(ascii: "."))
        guard fractionDigits > 0 else { return output.append(UInt8(ascii: "0")) }
        var fraction = digits % scale
        for _ in 0..<fractionDigits { output.append(UInt8(ascii: "0")) }
        var position = output.count - 1
        while fraction > 0 {
            output[position] = UInt8(ascii: "0") + UInt8(fraction % 10)
            fraction /= 10
            position -= 1
        }
    }

    /// The decimal `digits / 10^fractionDigits` with the fewest fraction digits that reads back as `magnitude`, when
    /// that is what `description` writes: for magnitudes from 10^-4 (below, it writes an exponent) to 10^9, and
    /// only while 10^-fractionDigits exceeds the spacing of doubles there, so that one decimal at most reads back as
    /// `magnitude` and the shortest is also the closest. `nil` otherwise, and the caller asks `description`.
    ///
    /// A candidate, an integer below 2^53, is checked by dividing it by an exact power of ten: one correctly rounded
    /// operation, so the result is the double the decimal reads as (Clinger's fast path). The candidate is the
    /// product `magnitude * 10^k` rounded, which may be a neighbour of the right integer; then a longer decimal is
    /// found, the right one with a zero appended (the only one at that length), and a last fraction digit of zero
    /// sends the value to `description`. `DoubleWritingTests` checks this against `description` on 600,000 values.
    package static func shortDecimal(_ magnitude: Double) -> (digits: UInt64, fractionDigits: Int)? {
        guard magnitude >= 1e-4, magnitude < 1e9 else { return nil }
        let spacing = magnitude.ulp
        var scale = 1.0
        for fractionDigits in 0...15 {
            guard scale * spacing < 1 else { return nil }
            let scaled = magnitude * scale + 0.5
            guard scaled < 9e15 else { return nil }
            let candidate = UInt64(scaled)
            if Double(candidate) / scale == magnitude {
                return fractionDigits > 0 && candidate % 10 == 0 ? nil : (candidate, fractionDigits)
            }
            scale *= 10
        }
        return nil
    }

    private static func append(_ text: StaticString, to output: inout [UInt8]) {
        output.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
