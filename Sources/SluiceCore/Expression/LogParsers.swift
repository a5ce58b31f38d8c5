/// The `parse_*` functions: a log line's text into an object of its fields. Each takes valid UTF-8 (a string's
/// bytes) and returns a value or throws an ``EvaluationError`` saying what it could not read, which discards the
/// event under `error` like any other evaluation error.
enum LogParsers {
    // MARK: - key=value

    /// `parse_logfmt(s)`: `key=value` pairs separated by spaces; a value may be quoted (`"two words"`, with the
    /// escapes Go's logfmt encoders write: `\"`, `\\`, `\n`, `\r`, `\t`; a backslash before anything else is
    /// itself); a key without `=` is `true`. Values are strings, as logfmt carries no types.
    static func logfmt(_ text: String) throws(EvaluationError) -> JSONValue {
        try keyValue(text, fieldSeparator: " ", valueSeparator: "=", name: "parse_logfmt")
    }

    /// `parse_key_value(s, field_separator, value_separator)`: like logfmt with other separators (defaults `" "`
    /// and `"="`); runs of the field separator count as one, and space around keys and values is trimmed.
    static func keyValue(
        _ text: String, fieldSeparator: String, valueSeparator: String, name: String = "parse_key_value"
    )
        throws(EvaluationError) -> JSONValue
    {
        guard !fieldSeparator.isEmpty, !valueSeparator.isEmpty else {
            throw EvaluationError("'\(name)' needs separators that are not empty")
        }
        var text = text
        let field = Array(fieldSeparator.utf8)
        let value = Array(valueSeparator.utf8)
        // On the string's own bytes: a pair costs a few byte compares, not a copy of the text and a sequence
        // comparison per byte (measured at 4 µs a line of four pairs before).
        let result = text.withUTF8 { bytes in
            Result { () throws(EvaluationError) in try keyValue(bytes, field, value, name) }
        }
        return try result.get()
    }

    private static func keyValue(
        _ bytes: UnsafeBufferPointer<UInt8>, _ field: [UInt8], _ value: [UInt8], _ name: String
    ) throws(EvaluationError) -> JSONValue {
        // Built in linear time: a line of many pairs is no slower per pair than a short one.
        var object = JSONObject.Builder()
        var position = 0
        func at(_ separator: [UInt8]) -> Bool {
            guard position + separator.count <= bytes.count, bytes[position] == separator[0] else { return false }
            for offset in 1..<separator.count where bytes[position + offset] != separator[offset] { return false }
            return true
        }
        func skipSpaces() { while position < bytes.count, bytes[position] == 0x20 { position += 1 } }
        while position < bytes.count {
            while at(field) { position += field.count }
            skipSpaces()
            guard position < bytes.count else { break }
            let keyStart = position
            while position < bytes.count, !at(value), !at(field) { position += 1 }
            let key = trimmed(bytes, keyStart..<position)
            guard at(value) else {
                if !key.isEmpty { object.set(key, .bool(true)) }
                continue
            }
            position += value.count
            skipSpaces()
            let parsed: String
            if position < bytes.count, bytes[position] == UInt8(ascii: "\"") {
                var unquoted: [UInt8] = []
                position += 1
                while position < bytes.count, bytes[position] != UInt8(ascii: "\"") {
                    if bytes[position] == UInt8(ascii: "\\"), position + 1 < bytes.count,
                        let unescaped = logfmtEscapes[bytes[position + 1]]
                    {
                        unquoted.append(unescaped)
                        position += 2
                        continue
                    }
                    unquoted.append(bytes[position])
                    position += 1
                }
                guard position < bytes.count else {
                    throw EvaluationError("'\(name)' found no closing quote for the value of '\(key)'")
                }
                position += 1
                parsed = String(decoding: unquoted, as: UTF8.self)
            } else {
                let valueStart = position
                while position < bytes.count, !at(field) { position += 1 }
                parsed = trimmed(bytes, valueStart..<position)
            }
            guard !key.isEmpty else { throw EvaluationError("'\(name)' found a value without a key") }
            object.set(key, .string(parsed))
        }
        return .object(object.object)
    }

    /// What a backslash and the byte after it stand for in a quoted logfmt value.
    private static let logfmtEscapes: [UInt8: UInt8] = [
        UInt8(ascii: "\""): UInt8(ascii: "\""), UInt8(ascii: "\\"): UInt8(ascii: "\\"), UInt8(ascii: "n"): 0x0A,
        UInt8(ascii: "r"): 0x0D, UInt8(ascii: "t"): 0x09,
    ]

    /// The bytes in `range` as a string without whitespace at either end (``Swift/String/trimmingSpaces``).
    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self).trimmingSpaces
    }

    // MARK: - CSV

    /// `parse_csv(s, delimiter)`: one record of RFC 4180 into an array of strings: fields may be quoted, a quote
    /// inside a quoted field is written twice, and a quoted field may hold the delimiter and line breaks.
    static func csv(_ text: String, delimiter: String) throws(EvaluationError) -> JSONValue {
        guard delimiter.utf8.count == 1, let separator = delimiter.utf8.first, separator != UInt8(ascii: "\"") else {
            throw EvaluationError("the delimiter of 'parse_csv' must be one ASCII character other than '\"'")
        }
        let bytes = Array(text.utf8)
        var fields: [JSONValue] = []
        var field: [UInt8] = []
        var position = 0
        while true {
            field.removeAll(keepingCapacity: true)
            if position < bytes.count, bytes[position] == UInt8(ascii: "\"") {
                position += 1
                while true {
                    guard position < bytes.count else {
                        throw EvaluationError("'parse_csv' found a quoted field without its closing quote")
                    }
                    if bytes[position] == UInt8(ascii: "\"") {
                        if position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "\"") {
                            field.append(UInt8(ascii: "\""))
                            position += 2
                            continue
                        }
                        position += 1
                        break
                    }
                    field.append(bytes[position])
                    position += 1
                }
                guard position == bytes.count || bytes[position] == separator else {
                    throw EvaluationError("'parse_csv' found text after the closing quote of field \(fields.count + 1)")
                }
            } else {
                while position < bytes.count, bytes[position] != separator {
                    guard bytes[position] != UInt8(ascii: "\"") else {
                        throw EvaluationError("'parse_csv' found a quote inside unquoted field \(fields.count + 1)")
                    }
                    field.append(bytes[position])
                    position += 1
                }
            }
            fields.append(.string(String(decoding: field, as: UTF8.self)))
            guard position < bytes.count else { break }
            position += 1
        }
        return .array(fields)
    }

    // MARK: - Syslog

    static let facilities = [
        "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv", "ftp", "ntp",
        "security", "console", "solaris-cron", "local0", "local1", "local2", "local3", "local4", "local5", "local6",
        "local7",
    ]
    static let severities = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `parse_syslog(s)`: RFC 5424 (`<PRI>1 TIMESTAMP HOST APP PROCID MSGID [SD] MSG`) or RFC 3164
    /// (`<PRI>Mmm dd hh:mm:ss HOST TAG[PID]: MSG`) into `facility`, `severity`, `timestamp` (RFC 3339, UTC),
    /// `host`, `app`, `pid` (a number when it is one), `msg_id`, `structured_data`, `message` (and `version` for
    /// RFC 5424). Nil values (`-`) are left out. An RFC 3164 time has no year: it is taken as the year `now`
    /// falls in (the year before, if that would put the time more than a day ahead of `now`).
    static func syslog(_ text: String, nowMillis: Int64) throws(EvaluationError) -> JSONValue {
        var reader = TextReader(text)
        guard reader.skip("<"), let priority = reader.integer(maxDigits: 3), priority <= 191, reader.skip(">") else {
            throw EvaluationError("'parse_syslog' needs a line that starts with a priority such as <34>")
        }
        var object = JSONObject()
        object["facility"] = .string(facilities[priority / 8])
        object["severity"] = .string(severities[priority % 8])
        // A version (1 or 2 digits and a space) makes it RFC 5424; a relay's leading year is 4 digits.
        var versionReader = reader
        if let version = versionReader.integer(maxDigits: 2), versionReader.skip(" ") {
            reader = versionReader
            try syslog5424(&reader, version: version, into: &object)
        } else {
            try syslog3164(&reader, nowMillis: nowMillis, into: &object)
        }
        return .object(object)
    }

    private static func syslog5424(_ reader: inout TextReader, version: Int, into object: inout JSONObject)
        throws(EvaluationError)
    {
        object["version"] = .int(Int64(version))
        let timestamp = reader.word()
        if timestamp != "-" {
            guard let millis = RFC3339.parse(timestamp) else {
                throw EvaluationError("'parse_syslog' cannot read the time '\(timestamp.prefix(40))'")
            }
            object["timestamp"] = .string(RFC3339.format(epochMillis: millis))
        }
        for name in ["host", "app", "pid", "msg_id"] {
            guard reader.skip(" ") || reader.atEnd else {
                throw EvaluationError("'parse_syslog' expected a space before the \(name)")
            }
            let word = reader.word()
            if word != "-", !word.isEmpty { object[name] = name == "pid" ? number(word) : .string(word) }
        }
        guard reader.skip(" ") else { return }
        if reader.skip("-") {
        } else if reader.peek == UInt8(ascii: "[") {
            object["structured_data"] = try structuredData(&reader)
        } else {
            throw EvaluationError("'parse_syslog' expected structured data ('-' or '[...]')")
        }
        if reader.skip(" ") {
            // A UTF-8 message may start with a byte order mark (RFC 5424, 6.4).
            _ = reader.skip("\u{FEFF}")
            object["message"] = .string(reader.rest())
        }
    }

    /// `[id name="value" ...][id2 ...]` into `{"id": {"name": "value"}, ...}`; `\"`, `\\` and `\]` are escapes.
    private static func structuredData(_ reader: inout TextReader) throws(EvaluationError) -> JSONValue {
        var elements = JSONObject.Builder()
        while reader.skip("[") {
            let id = reader.word(until: [UInt8(ascii: " "), UInt8(ascii: "]")])
            var parameters = JSONObject.Builder()
            while reader.skip(" ") {
                let name = reader.word(until: [UInt8(ascii: "=")])
                guard reader.skip("=\"") else {
                    throw EvaluationError("'parse_syslog' expected =\"value\" after '\(name)' in [\(id)]")
                }
                // RFC 5424, 6.3.3: '"', '\' and ']' are escaped; a backslash before anything else is itself.
                guard let value = reader.quoted(escaping: [UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "]")])
                else {
                    throw EvaluationError("'parse_syslog' found no closing quote in [\(id)]")
                }
                parameters.set(name, .string(value))
            }
            guard reader.skip("]") else { throw EvaluationError("'parse_syslog' expected ']' to close [\(id)]") }
            elements.set(id, .object(parameters.object))
        }
        return .object(elements.object)
    }

    private static func syslog3164(_ reader: inout TextReader, nowMillis: Int64, into object: inout JSONObject)
        throws(EvaluationError)
    {
        // Relays write the year before or after the time, and a zone name after it (RFC 3164, 5.4's examples).
        let leadingYear = reader.yearAndSpace()
        guard let monthName = reader.word(length: 3), let month = months.firstIndex(of: monthName),
            reader.skip(" ")
        else {
            throw EvaluationError("'parse_syslog' expected an RFC 3164 time such as 'Oct 11 22:14:15'")
        }
        _ = reader.skip(" ")
        guard let day = reader.integer(maxDigits: 2), reader.skip(" "), let hour = reader.integer(maxDigits: 2),
            reader.skip(":"), let minute = reader.integer(maxDigits: 2), reader.skip(":"),
            let second = reader.integer(maxDigits: 2), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else {
            throw EvaluationError("'parse_syslog' expected an RFC 3164 time such as 'Oct 11 22:14:15'")
        }
        var year = leadingYear
        var zone: String?
        for _ in 0..<2 {
            var lookahead = reader
            guard lookahead.skip(" ") else { break }
            if year == nil, let trailing = lookahead.yearAndSpace(allowEnd: true) {
                year = trailing
                reader = lookahead
                reader.unskipSpace()
            } else if let name = lookahead.zoneName() {
                zone = name
                reader = lookahead
            } else {
                break
            }
        }
        let timeOfDay = Int64(hour) * 3_600_000 + Int64(minute) * 60_000 + Int64(second) * 1_000
        func millis(_ year: Int) -> Int64 {
            RFC3339.daysFromCivil(year: Int64(year), month: month + 1, day: day) * 86_400_000 + timeOfDay
        }
        let nowDays = nowMillis >= 0 ? nowMillis / 86_400_000 : (nowMillis + 1) / 86_400_000 - 1
        let nowYear = Int(RFC3339.civil(fromDays: nowDays).year)
        var timestamp = millis(year ?? nowYear)
        if year == nil, timestamp > nowMillis + 86_400_000 { timestamp = millis(nowYear - 1) }
        object["timestamp"] = .string(RFC3339.format(epochMillis: timestamp))
        if let zone { object["timezone"] = .string(zone) }
        guard reader.skip(" ") else { return }
        let host = reader.word()
        if !host.isEmpty { object["host"] = .string(host) }
        guard reader.skip(" ") else { return }
        // The tag: letters, digits and `-_./` (`postfix/smtpd`) up to ':' or '[' (at most 32 characters);
        // otherwise the rest is all message (a Cisco `%LINK-3-UPDOWN:` is message).
        var tagged = reader
        let tag = tagged.word(until: [UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: " ")])
        if !tag.isEmpty, tag.utf8.count <= 32, tag.utf8.allSatisfy(Self.isTagByte),
            tagged.peek == UInt8(ascii: "[") || tagged.peek == UInt8(ascii: ":")
        {
            object["app"] = .string(tag)
            if tagged.skip("[") {
                let pid = tagged.word(until: [UInt8(ascii: "]")])
                _ = tagged.skip("]")
                object["pid"] = number(pid)
            }
            _ = tagged.skip(":")
            _ = tagged.skip(" ")
            reader = tagged
        }
        object["message"] = .string(reader.rest())
    }

    private static func isTagByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
            UInt8(ascii: "/"):
            true
        default: false
        }
    }

    private static func number(_ text: String) -> JSONValue {
        if let value = Int64(text) { return .int(value) }
        return .string(text)
    }

    // MARK: - Access logs

    /// `parse_common_log(s)`: `host ident user [10/Oct/2000:13:55:36 -0700] "GET /path HTTP/1.0" 200 2326` into
    /// `host`, `ident`, `user`, `timestamp` (RFC 3339, UTC), `method`, `path`, `protocol`, `status` and `size`
    /// (numbers); `-` fields are left out. With `combined`, then `"referer" "agent"` as well.
    static func accessLog(_ text: String, combined: Bool) throws(EvaluationError) -> JSONValue {
        let name = combined ? "parse_combined_log" : "parse_common_log"
        var reader = TextReader(text)
        var object = JSONObject()
        for field in ["host", "ident", "user"] {
            let word = reader.word()
            guard !word.isEmpty, reader.skip(" ") else {
                throw EvaluationError("'\(name)' expected the \(field) at the start of the line")
            }
            if word != "-" { object[field] = .string(word) }
        }
        guard reader.skip("[") else {
            throw EvaluationError("'\(name)' expected a time such as [10/Oct/2000:13:55:36 -0700]")
        }
        let time = reader.word(until: [UInt8(ascii: "]")])
        guard reader.skip("] "), let millis = TimeFormat.accessLog.parse(time) else {
            throw EvaluationError("'\(name)' expected a time such as [10/Oct/2000:13:55:36 -0700]")
        }
        object["timestamp"] = .string(RFC3339.format(epochMillis: millis))
        // nginx and Apache write `\"` and `\\` in quoted fields, and other bytes as `\xHH`, which stays as written.
        let escaped = [UInt8(ascii: "\""), UInt8(ascii: "\\")]
        guard reader.skip("\""), let request = reader.quoted(escaping: escaped) else {
            throw EvaluationError("'\(name)' expected the request in quotes")
        }
        let parts = request.split(separator: " ", omittingEmptySubsequences: true)
        if parts.count == 3 {
            object["method"] = .string(String(parts[0]))
            object["path"] = .string(String(parts[1]))
            object["protocol"] = .string(String(parts[2]))
        } else if request != "-" {
            object["request"] = .string(request)
        }
        guard reader.skip(" "), let status = Int64(reader.word()), reader.skip(" ") else {
            throw EvaluationError("'\(name)' expected the status code after the request")
        }
        object["status"] = .int(status)
        let size = reader.word()
        if let bytes = Int64(size) {
            object["size"] = .int(bytes)
        } else if size != "-" {
            throw EvaluationError("'\(name)' expected the size in bytes or '-', found '\(size.prefix(40))'")
        }
        if combined {
            for field in ["referer", "agent"] {
                guard reader.skip(" \""), let value = reader.quoted(escaping: escaped) else {
                    throw EvaluationError("'\(name)' expected the \(field) in quotes")
                }
                if value != "-" { object[field] = .string(value) }
            }
        }
        return .object(object)
    }
}

/// A cursor over a string's UTF-8 bytes for the parsers.
struct TextReader {
    private let bytes: [UInt8]
    private var position = 0

    init(_ text: String) { bytes = Array(text.utf8) }

    var atEnd: Bool { position >= bytes.count }
    var peek: UInt8? { position < bytes.count ? bytes[position] : nil }

    /// Consumes `literal` when the text continues with it.
    mutating func skip(_ literal: String) -> Bool {
        let literal = literal.utf8
        guard bytes.count - position >= literal.count, bytes[position...].starts(with: literal) else { return false }
        position += literal.count
        return true
    }

    mutating func unskipSpace() {
        if position > 0, bytes[position - 1] == 0x20 { position -= 1 }
    }

    /// Up to `maxDigits` decimal digits (at least one).
    mutating func integer(maxDigits: Int) -> Int? {
        var value = 0
        var count = 0
        while count < maxDigits, let byte = peek, byte >= 0x30, byte <= 0x39 {
            value = value * 10 + Int(byte - 0x30)
            position += 1
            count += 1
        }
        return count > 0 ? value : nil
    }

    /// The text up to the next space (or any of `stops`), or the end.
    mutating func word(until stops: [UInt8] = [0x20]) -> String {
        let start = position
        while let byte = peek, !stops.contains(byte) { position += 1 }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// Exactly `length` bytes, when there are that many.
    mutating func word(length: Int) -> String? {
        guard bytes.count - position >= length else { return nil }
        defer { position += length }
        return String(decoding: bytes[position..<position + length], as: UTF8.self)
    }

    /// The rest of a quoted string whose opening quote was consumed: up to the closing quote (consumed), where a
    /// backslash before one of `escaped` stands for that byte and before anything else is itself; `nil` when no
    /// quote closes it.
    mutating func quoted(escaping escaped: [UInt8]) -> String? {
        var value: [UInt8] = []
        while let byte = peek {
            position += 1
            if byte == UInt8(ascii: "\"") { return String(decoding: value, as: UTF8.self) }
            if byte == UInt8(ascii: "\\"), let next = peek, escaped.contains(next) {
                value.append(next)
                position += 1
            } else {
                value.append(byte)
            }
        }
        return nil
    }

    mutating func rest() -> String {
        defer { position = bytes.count }
        return String(decoding: bytes[position...], as: UTF8.self)
    }

    /// A four-digit year followed by a space (or the end, with `allowEnd`), consumed with the space.
    mutating func yearAndSpace(allowEnd: Bool = false) -> Int? {
        var lookahead = self
        guard let year = lookahead.integer(maxDigits: 4), lookahead.position - position == 4, year >= 1970,
            lookahead.skip(" ") || (allowEnd && lookahead.atEnd)
        else { return nil }
        self = lookahead
        return year
    }

    /// A time zone name after a syslog time: a known abbreviation (`CST`, `UTC`), or capital letters with an
    /// offset (`TZ-6`, `GMT+2`). Capital letters alone are not enough: network devices name themselves `ROUTER`
    /// or `CORE`, and the word after the time is then the host.
    mutating func zoneName() -> String? {
        let start = position
        while let byte = peek, byte >= UInt8(ascii: "A"), byte <= UInt8(ascii: "Z") { position += 1 }
        let letters = String(decoding: bytes[start..<position], as: UTF8.self)
        var known = letters.utf8.count >= 2 && Self.zoneAbbreviations.contains(letters)
        if letters.utf8.count >= 2, let sign = peek, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            position += 1
            known = integer(maxDigits: 4) != nil
        }
        guard known, atEnd || peek == 0x20 else {
            position = start
            return nil
        }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// The zone abbreviations relays write after a syslog time.
    private static let zoneAbbreviations: Set<String> = [
        "UT", "UTC", "GMT", "EST", "EDT", "CST", "CDT", "MST", "MDT", "PST", "PDT", "AKST", "AKDT", "HST", "AST",
        "ADT", "NST", "NDT", "WET", "WEST", "CET", "CEST", "EET", "EEST", "MSK", "BST", "IST", "JST", "KST", "HKT",
        "SGT", "AEST", "AEDT", "ACST", "ACDT", "AWST", "NZST", "NZDT",
    ]
}
