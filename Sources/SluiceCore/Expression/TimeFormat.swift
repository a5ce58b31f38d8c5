/// A strftime-style format for reading times (`parse_time(s, "%d/%b/%Y:%H:%M:%S %z")`), compiled once.
///
/// `%Y` year, `%y` two-digit year (69-99: 19xx, 00-68: 20xx), `%m` month, `%d` and `%e` day, `%H` hour, `%I` hour
/// on a 12-hour clock with `%p` (AM/PM), `%M` minute, `%S` second, `%f` fraction of a second (after a `.` you
/// write), `%b`/`%h` month abbreviation and `%B` month name (any case), `%a`/`%A` weekday name (read, not checked),
/// `%z` offset (`+0200`, `+02:00`, `Z`), `%Z` zone name (`UTC`, `GMT` or `Z` only), `%s` seconds since the epoch,
/// `%j` day of the year, `%T` = `%H:%M:%S`, `%F` = `%Y-%m-%d`, `%D` = `%m/%d/%y`, `%R` = `%H:%M`, `%%` a percent
/// sign. A space matches any run of spaces (none included), as in strptime. Without a zone the time is UTC; parts
/// the format leaves out are those of 1970-01-01T00:00:00.
struct TimeFormat: Sendable, Equatable {
    private enum Part: Sendable, Equatable {
        case literal(UInt8)
        case space
        case field(Character)
    }

    let source: String
    private let parts: [Part]

    /// The time of Apache and nginx access logs.
    static let accessLog = TimeFormat(
        parts: [
            .field("d"), .literal(UInt8(ascii: "/")), .field("b"), .literal(UInt8(ascii: "/")), .field("Y"),
            .literal(UInt8(ascii: ":")), .field("H"), .literal(UInt8(ascii: ":")), .field("M"),
            .literal(UInt8(ascii: ":")), .field("S"), .space, .field("z"),
        ], source: "%d/%b/%Y:%H:%M:%S %z")

    private init(parts: [Part], source: String) {
        self.parts = parts
        self.source = source
    }

    private static let fields: Set<Character> = [
        "Y", "y", "m", "d", "e", "H", "I", "p", "M", "S", "f", "b", "h", "B", "a", "A", "z", "Z", "s", "j",
    ]
    private static let shorthands: [Character: String] = [
        "T": "%H:%M:%S", "F": "%Y-%m-%d", "D": "%m/%d/%y", "R": "%H:%M",
    ]

    /// Compiles `source`; an unknown or unfinished `%` directive throws its message.
    init(_ source: String) throws(EvaluationError) {
        self.source = source
        var parts: [Part] = []
        try Self.compile(source, into: &parts)
        self.parts = parts
    }

    private static func compile(_ source: String, into parts: inout [Part]) throws(EvaluationError) {
        var iterator = source.makeIterator()
        while let character = iterator.next() {
            if character == " " {
                parts.append(.space)
            } else if character != "%" {
                parts += character.utf8.map(Part.literal)
            } else {
                guard let directive = iterator.next() else {
                    throw EvaluationError("the time format ends in the middle of a '%' directive")
                }
                if directive == "%" {
                    parts.append(.literal(UInt8(ascii: "%")))
                } else if let expansion = shorthands[directive] {
                    try compile(expansion, into: &parts)
                } else if fields.contains(directive) {
                    parts.append(.field(directive))
                } else {
                    throw EvaluationError("the time format has an unknown directive '%\(directive)'")
                }
            }
        }
    }

    /// The time `text` writes in this format, in epoch milliseconds; `nil` when it does not fit the format.
    func parse(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        var position = 0
        var year = 1970
        var month = 1
        var day = 1
        var dayOfYear: Int?
        var hour = 0
        var minute = 0
        var second = 0
        var millis = 0
        var offsetMinutes = 0
        var pm: Bool?
        var epochSeconds: Int64?

        func digits(_ maximum: Int, optionalSpace: Bool = false) -> Int? {
            if optionalSpace, position < bytes.count, bytes[position] == 0x20 { position += 1 }
            var value = 0
            var count = 0
            while count < maximum, position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 {
                value = value * 10 + Int(bytes[position] - 0x30)
                position += 1
                count += 1
            }
            return count > 0 ? value : nil
        }
        func name(in names: [String]) -> Int? {
            for (index, candidate) in names.enumerated() {
                let candidate = Array(candidate.utf8)
                guard bytes.count - position >= candidate.count else { continue }
                let matches = zip(bytes[position..<position + candidate.count], candidate).allSatisfy {
                    $0 | 0x20 == $1 | 0x20
                }
                if matches {
                    position += candidate.count
                    return index
                }
            }
            return nil
        }

        for part in parts {
            switch part {
            case .literal(let byte):
                guard position < bytes.count, bytes[position] == byte else { return nil }
                position += 1
            case .space:
                while position < bytes.count, bytes[position] == 0x20 { position += 1 }
            case .field(let field):
                switch field {
                case "Y":
                    guard let value = digits(4) else { return nil }
                    year = value
                case "y":
                    guard let value = digits(2) else { return nil }
                    year = value >= 69 ? 1900 + value : 2000 + value
                case "m":
                    guard let value = digits(2), (1...12).contains(value) else { return nil }
                    month = value
                case "d", "e":
                    guard let value = digits(2, optionalSpace: field == "e"), (1...31).contains(value) else {
                        return nil
                    }
                    day = value
                case "j":
                    guard let value = digits(3), (1...366).contains(value) else { return nil }
                    dayOfYear = value
                case "H", "I":
                    guard let value = digits(2), value < (field == "H" ? 24 : 13) else { return nil }
                    hour = value
                case "M":
                    guard let value = digits(2), value < 60 else { return nil }
                    minute = value
                case "S":
                    guard let value = digits(2), value <= 60 else { return nil }
                    second = value
                case "f":
                    let start = position
                    guard let value = digits(9) else { return nil }
                    millis = Int(Int64(value) * 1_000 / Self.power(position - start))
                case "p":
                    guard let index = name(in: ["AM", "PM"]) else { return nil }
                    pm = index == 1
                case "b", "h":
                    guard let index = name(in: LogParsers.months) else { return nil }
                    month = index + 1
                case "B":
                    guard let index = name(in: Self.monthNames) else { return nil }
                    month = index + 1
                case "a", "A":
                    guard name(in: field == "a" ? Self.weekdays.map { String($0.prefix(3)) } : Self.weekdays) != nil
                    else { return nil }
                case "z":
                    guard let offset = readOffset(bytes, &position) else { return nil }
                    offsetMinutes = offset
                case "Z":
                    guard name(in: ["UTC", "GMT", "Z"]) != nil else { return nil }
                default:  // "s"
                    let negative = position < bytes.count && bytes[position] == UInt8(ascii: "-")
                    if negative { position += 1 }
                    guard let value = digits(18) else { return nil }
                    epochSeconds = negative ? -Int64(value) : Int64(value)
                }
            }
        }
        guard position == bytes.count else { return nil }
        if let epochSeconds { return epochSeconds * 1_000 + Int64(millis) }
        if let pm {
            guard (1...12).contains(hour) else { return nil }
            hour = hour % 12 + (pm ? 12 : 0)
        }
        // A day the month or year does not have (31 April, 29 February 2026, day 366 of 2026) is no time, not the
        // day it would roll over to.
        let days: Int64
        if let dayOfYear {
            guard dayOfYear <= (RFC3339.daysIn(month: 2, year: year) == 29 ? 366 : 365) else { return nil }
            days = RFC3339.daysFromCivil(year: Int64(year), month: 1, day: 1) + Int64(dayOfYear - 1)
        } else {
            guard day <= RFC3339.daysIn(month: month, year: year) else { return nil }
            days = RFC3339.daysFromCivil(year: Int64(year), month: month, day: day)
        }
        let seconds = days * 86_400 + Int64(hour * 3_600 + minute * 60 + second) - Int64(offsetMinutes * 60)
        return seconds * 1_000 + Int64(millis)
    }

    private static func power(_ exponent: Int) -> Int64 {
        var value: Int64 = 1
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    /// `Z`, `+hh`, `+hhmm` or `+hh:mm` (and `-`), in minutes east of UTC.
    private func readOffset(_ bytes: [UInt8], _ position: inout Int) -> Int? {
        guard position < bytes.count else { return nil }
        if bytes[position] == UInt8(ascii: "Z") {
            position += 1
            return 0
        }
        let sign = bytes[position]
        guard sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") else { return nil }
        position += 1
        func two() -> Int? {
            guard bytes.count - position >= 2, bytes[position] >= 0x30, bytes[position] <= 0x39,
                bytes[position + 1] >= 0x30, bytes[position + 1] <= 0x39
            else { return nil }
            defer { position += 2 }
            return Int(bytes[position] - 0x30) * 10 + Int(bytes[position + 1] - 0x30)
        }
        guard let hours = two(), hours < 24 else { return nil }
        if position < bytes.count, bytes[position] == UInt8(ascii: ":") { position += 1 }
        let minutes = two() ?? 0
        guard minutes < 60 else { return nil }
        return (hours * 60 + minutes) * (sign == UInt8(ascii: "-") ? -1 : 1)
    }

    private static let monthNames = [
        "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
        "November", "December",
    ]
    private static let weekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
}
