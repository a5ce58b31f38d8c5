/// Converts between RFC 3339 timestamps and epoch milliseconds without Foundation, for the event path.
public enum RFC3339 {
    /// The epoch milliseconds that RFC 3339 writes with its four-digit years: 0000-01-01T00:00:00.000Z to
    /// 9999-12-31T23:59:59.999Z. Stages that compute with event times keep to these, so that no window bound
    /// overflows and every one can be written.
    public static let writableMillis: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999

    /// `2026-11-30T12:00:00.123Z` for `millis` since the Unix epoch, always in UTC with milliseconds.
    public static func format(epochMillis millis: Int64) -> String {
        var formatter = Formatter()
        return formatter.format(epochMillis: millis)
    }

    /// Formats many timestamps in a row: the date and time up to the second is computed once per second, so a
    /// stream of readings pays only for its milliseconds.
    public struct Formatter: Sendable {
        private var cachedSecond: Int64?
        private var prefix: [UInt8] = []

        /// A formatter with nothing cached yet.
        public init() {}

        /// The same text as ``RFC3339/format(epochMillis:)``.
        public mutating func format(epochMillis millis: Int64) -> String {
            var bytes: [UInt8] = []
            withParts(epochMillis: millis) { prefix, milli in
                bytes.append(contentsOf: prefix)
                bytes.append(UInt8(ascii: "0") + UInt8(milli / 100))
                bytes.append(UInt8(ascii: "0") + UInt8(milli / 10 % 10))
                bytes.append(UInt8(ascii: "0") + UInt8(milli % 10))
                bytes.append(UInt8(ascii: "Z"))
            }
            return String(decoding: bytes, as: UTF8.self)
        }

        /// Calls `body` with the text up to the second's point (`2026-11-30T12:00:00.`, computed once per second),
        /// lent where it is cached (returned as an array, it was retained and released for every reading of the
        /// simulator), and the millisecond. (Not generic, so that the simulator in another module calls it without
        /// looking up generic metadata.)
        package mutating func withParts(
            epochMillis millis: Int64, _ body: (_ secondText: UnsafeBufferPointer<UInt8>, _ milli: Int) -> Void
        ) {
            let seconds = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
            if seconds != cachedSecond {
                cachedSecond = seconds
                prefix = Array(RFC3339.secondsText(seconds).utf8)
            }
            prefix.withUnsafeBufferPointer { body($0, Int(millis - seconds * 1000)) }
        }
    }

    /// `2026-11-30T12:00:00.` for `seconds` since the Unix epoch.
    private static func secondsText(_ seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = civil(fromDays: days)
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(Int(year), 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))."
    }

    /// Epoch milliseconds for an RFC 3339 timestamp (`2026-11-30T12:00:00Z`, `...00.5+01:00`); `nil` if invalid.
    public static func parse(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { parse(bytes: $0) }
    }

    /// ``parse(_:)`` on the text's UTF-8 bytes, which is how stages read times out of event text without making a
    /// string first.
    public static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var index = 0
        func number(_ digits: Int) -> Int? {
            guard index + digits <= bytes.count else { return nil }
            var value = 0
            for offset in 0..<digits {
                let byte = bytes[index + offset]
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += digits
            return value
        }
        func expect(_ first: Unicode.Scalar, _ second: Unicode.Scalar? = nil, _ third: Unicode.Scalar? = nil) -> Bool {
            guard index < bytes.count else { return false }
            let byte = bytes[index]
            guard
                byte == UInt8(ascii: first) || second.map({ byte == UInt8(ascii: $0) }) == true
                    || third.map({ byte == UInt8(ascii: $0) }) == true
            else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            expect("T", "t", " "), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
            let second = number(2), (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var millis = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 100
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                millis += Int(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        var offsetMinutes = 0
        if expect("Z", "z") {
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let offsetHours = number(2), expect(":"), let offsetMins = number(2) else { return nil }
            offsetMinutes = sign * (offsetHours * 60 + offsetMins)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = daysFromCivil(year: Int64(year), month: month, day: day)
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetMinutes * 60)
        return seconds * 1000 + Int64(millis)
    }

    /// For `YYYY-MM-DDTHH:MM:SS[.fff]Z` text: the milliseconds after the minute, read from `:SS[.fff]Z` at offset
    /// 16; `nil` for any other form (an offset, say), which the full ``parse(bytes:)`` reads.
    static func millisInMinute(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard bytes.count >= 20, bytes[16] == UInt8(ascii: ":") else { return nil }
        let tens = bytes[17] &- UInt8(ascii: "0")
        let ones = bytes[18] &- UInt8(ascii: "0")
        guard tens < 7, ones < 10 else { return nil }
        let second = Int64(tens) * 10 + Int64(ones)
        guard second < 61 else { return nil }
        var index = 19
        var millis: Int64 = 0
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale: Int64 = 100
            let start = index
            while index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10 {
                millis += Int64(bytes[index] &- UInt8(ascii: "0")) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index == bytes.count - 1, bytes[index] | 0x20 == UInt8(ascii: "z") else { return nil }
        return second * 1000 + millis
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int64, month: Int, day: Int) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(fromDays days: Int64) -> (year: Int64, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
