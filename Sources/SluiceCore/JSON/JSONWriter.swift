/// Writes ``JSONValue``s as compact JSON bytes, appending to a caller-owned buffer so that a sink can encode a
/// whole batch into one reused allocation.
///
/// Strings are escaped as RFC 8259 requires (quote, backslash, control characters) and otherwise written as UTF-8;
/// doubles use Swift's shortest representation that reads back to the same value.
public enum JSONWriter {
    /// Appends the compact JSON text of `value` to `output`.
    public static func write(_ value: JSONValue, to output: inout [UInt8]) {
        switch value {
        case .null, .bool, .int, .double: writeScalar(value, to: &output)
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

    /// Appends a number, boolean or null in one append; a double that only `description` writes, as it writes it.
    private static func writeScalar(_ value: JSONValue, to output: inout [UInt8]) {
        let written = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: scalarCapacity) { buffer -> Bool in
            guard let count = write(scalar: value, into: buffer.baseAddress!) else { return false }
            output.append(contentsOf: UnsafeBufferPointer(start: buffer.baseAddress!, count: count))
            return true
        }
        if !written, case .double(let number) = value { appendDescription(of: number, to: &output) }
    }

    /// Appends what `description` writes for `number` without making a `String` (for 16 and 17 digits, a heap
    /// allocation): the standard library formats a double into a buffer on the stack and hands the digits to the
    /// stream's `_writeASCII`. A million 17-digit doubles: 66 -> 37 ns each.
    private static func appendDescription(of number: Double, to output: inout [UInt8]) {
        var stream = ASCIIAppender()
        swap(&stream.bytes, &output)
        number.write(to: &stream)
        swap(&stream.bytes, &output)
    }

    /// A stream into a byte array, taking ASCII as the bytes it is.
    private struct ASCIIAppender: TextOutputStream {
        var bytes: [UInt8] = []

        mutating func write(_ string: String) { bytes.append(contentsOf: string.utf8) }

        mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) { bytes.append(contentsOf: buffer) }
    }

    /// Room for any number, boolean or null ``write(scalar:into:)`` writes.
    package static let scalarCapacity = 32

    /// Writes a number, boolean or null into `buffer` (room for ``scalarCapacity`` bytes), so that a caller appends
    /// it with others in one go, and returns how many bytes it wrote; `nil`, writing nothing, for a string, a
    /// container, or a double only `description` writes.
    @inline(__always)
    package static func write(scalar value: JSONValue, into buffer: UnsafeMutablePointer<UInt8>) -> Int? {
        func literal(_ text: StaticString) -> Int {
            buffer.update(from: text.utf8Start, count: text.utf8CodeUnitCount)
            return text.utf8CodeUnitCount
        }
        switch value {
        case .null: return literal("null")
        case .bool(let flag): return literal(flag ? "true" : "false")
        case .int(let number): return write(number, into: buffer)
        case .double(let number): return write(number, into: buffer)
        case .string, .array, .object: return nil
        }
    }

    /// ``write(scalar:into:)`` for a numeric program's result: `nil`, writing nothing, only for a double that only
    /// `description` writes.
    @inline(__always)
    package static func write(scalar value: Scalar, into buffer: UnsafeMutablePointer<UInt8>) -> Int? {
        switch value {
        case .int(let number): write(number, into: buffer)
        case .double(let number): write(number, into: buffer)
        case .bool(let flag): write(scalar: JSONValue.bool(flag), into: buffer)
        }
    }

    /// Writes `number` at `buffer` as JSON writes it; returns how many bytes (at most 20).
    package static func write(_ number: Int64, into buffer: UnsafeMutablePointer<UInt8>) -> Int {
        let sign = number < 0 ? 1 : 0
        if sign == 1 { buffer[0] = UInt8(ascii: "-") }
        let digits = digitCount(number.magnitude)
        writeDigits(number.magnitude, width: digits, into: buffer + sign)
        return sign + digits
    }

    /// How many digits `magnitude`, an `Int64`'s (at most 19 digits), has: counted by comparison, not division.
    @inline(__always)
    private static func digitCount(_ magnitude: UInt64) -> Int {
        var digits = 1
        var limit: UInt64 = 10
        while digits < 19, magnitude >= limit {
            digits += 1
            limit &*= 10
        }
        return digits
    }

    /// Writes `value` in exactly `width` digits at `buffer`, with leading zeros: two digits a step from a table of
    /// the pairs `00` to `99`, one division by 100 where one by 10 for each digit took twice as many.
    @inline(__always)
    package static func writeDigits(_ value: UInt64, width: Int, into buffer: UnsafeMutablePointer<UInt8>) {
        let pairs = digitPairs.utf8Start
        var value = value
        var position = width
        while position >= 2 {
            let pair = Int(value % 100) &* 2
            value /= 100
            position -= 2
            buffer[position] = pairs[pair]
            buffer[position + 1] = pairs[pair + 1]
        }
        if position > 0 { buffer[0] = UInt8(ascii: "0") &+ UInt8(value % 10) }
    }

    /// `00` to `99`, one after another.
    private static let digitPairs: StaticString = """
        0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849\
        5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899
        """

    /// What `description` writes for `number`, when ``shortDecimal(_:)`` finds it: `digits` with the point
    /// `fractionDigits` from the right, and `.0` for a whole number; `null` for a number that is not finite.
    private static func write(_ number: Double, into buffer: UnsafeMutablePointer<UInt8>) -> Int? {
        // Values are finite by construction (the reader rejects overflow); `null` guards any that are not.
        guard number.isFinite else { return write(scalar: .null, into: buffer) }
        guard let (digits, fractionDigits) = shortDecimal(number.magnitude) else { return nil }
        var scale: UInt64 = 1
        for _ in 0..<fractionDigits { scale *= 10 }
        var count = 0
        if number < 0 {
            buffer[0] = UInt8(ascii: "-")
            count = 1
        }
        count += write(Int64(digits / scale), into: buffer + count)
        buffer[count] = UInt8(ascii: ".")
        count += 1
        guard fractionDigits > 0 else {
            buffer[count] = UInt8(ascii: "0")
            return count + 1
        }
        writeDigits(digits % scale, width: fractionDigits, into: buffer + count)
        return count + fractionDigits
    }

    /// The decimal `digits / 10^fractionDigits` with the fewest fraction digits that reads back as `magnitude`, when
    /// that is what `description` writes: for magnitudes from 10^-4 (below, it writes an exponent) to 10^9, and
    /// when that decimal has at most 15 significant digits. `nil` otherwise, and the caller asks `description`
    /// (whose 16 and 17 digit forms, where two decimals of that length may read back alike, it alone chooses).
    ///
    /// A candidate, an integer below 2^53, is checked by dividing it by an exact power of ten: one correctly rounded
    /// operation, so the result is the double the decimal reads as (Clinger's fast path). Up to two fraction digits
    /// are tried first, as most readings have; then one check settles the rest: at most one decimal of 15 significant
    /// digits reads back as a given double (DBL_DIG), so when the candidate of that length does, the shortest is it
    /// without its trailing zeros, and when it does not, no shorter one does either (it would be the same decimal
    /// with zeros appended). A candidate that is a neighbour of the right integer (the product is rounded) fails the
    /// check, and the caller asks `description`. `DoubleWritingTests` checks this against `description` on 600,000
    /// values.
    package static func shortDecimal(_ magnitude: Double) -> (digits: UInt64, fractionDigits: Int)? {
        guard magnitude >= 1e-4, magnitude < 1e9 else { return nil }
        // Two fraction digits, with the zeros at their end taken off: a decimal of fewer that reads back as the
        // magnitude is this one with zeros appended (the product of the magnitude and 100 is within 10^-4 of it,
        // so it rounds to it), so this finds the shortest of up to two with one division instead of three.
        let hundredths = UInt64(magnitude * 100 + 0.5)
        if Double(hundredths) / 100 == magnitude {
            if hundredths % 10 != 0 { return (hundredths, 2) }
            return hundredths % 100 != 0 ? (hundredths / 10, 1) : (hundredths / 100, 0)
        }
        // 15 significant digits: 14 after the first, whose place the decade gives. 2^e lies in decade
        // floor(e log10 2) (1233 / 4096 is log10 2 to four places), and the magnitude there or in the next.
        // The exponent from the bits (the magnitude is normal here), as `exponent` is a call into the library.
        var decade = ((Int(magnitude.exponentBitPattern) - 1023) * 1233) >> 12
        if magnitude >= decadeStart(decade + 1) { decade += 1 }
        var fractionDigits = 14 - decade
        let power = CanonicalJSON.powerOfTen(fractionDigits)
        let candidate = UInt64(magnitude * power + 0.5)
        // Over 15 digits (where a rounded product reached the next decade): not for this check.
        guard candidate < 1_000_000_000_000_000, Double(candidate) / power == magnitude else { return nil }
        // The trailing zeros, taken off 8, 4, 2 and 1 at a time: once each, in this order, takes off any number.
        var digits = candidate
        if fractionDigits >= 8, digits % 100_000_000 == 0 { (digits, fractionDigits) = (digits / 100_000_000, fractionDigits - 8) }
        if fractionDigits >= 4, digits % 10_000 == 0 { (digits, fractionDigits) = (digits / 10_000, fractionDigits - 4) }
        if fractionDigits >= 2, digits % 100 == 0 { (digits, fractionDigits) = (digits / 100, fractionDigits - 2) }
        if fractionDigits >= 1, digits % 10 == 0 { (digits, fractionDigits) = (digits / 10, fractionDigits - 1) }
        return (digits, fractionDigits)
    }

    /// 10^k for k from -4 to 9, the nearest doubles (each at or above the power, so no double below it is in its
    /// decade): where decade k starts. Literals, not a table, so that reading one is a constant.
    @inline(__always)
    private static func decadeStart(_ k: Int) -> Double {
        switch k {
        case ...(-4): 1e-4
        case -3: 1e-3
        case -2: 1e-2
        case -1: 1e-1
        case 0: 1
        case 1: 1e1
        case 2: 1e2
        case 3: 1e3
        case 4: 1e4
        case 5: 1e5
        case 6: 1e6
        case 7: 1e7
        case 8: 1e8
        default: 1e9
        }
    }
}
