import Foundation
import SluiceCore
import SluiceTesting
import Testing

/// Events keep canonical JSON text instead of a parsed value, so the scanner must never call text canonical that
/// the writer would write differently, and fields read from text must equal those of the parsed value.
struct CanonicalJSONTests {
    /// True when the scanner accepts `text`; when it does, checks that the writer writes exactly `text` back.
    func canonical(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        var scanner = CanonicalJSONScanner()
        let bytes = Array(text.utf8)
        let accepted = bytes.withUnsafeBufferPointer { scanner.isCanonical($0) }
        if accepted {
            let value = try? JSONReader.parse(bytes)
            #expect(value != nil, "accepted invalid JSON \(text)", sourceLocation: sourceLocation)
            if let value {
                #expect(JSONWriter.string(value) == text, "accepted \(text)", sourceLocation: sourceLocation)
            }
        }
        return accepted
    }

    @Test func machineWrittenEventsAreCanonical() {
        for text in [
            #"{"device":"dev-0001","seq":0,"ts":"2026-11-30T12:00:00.001Z","lat":52.508706,"temperature":22.2}"#,
            #"{"a":[1,-2,0,0.0,-0.0,65.0,0.5,0.0001,123456789012345,-9223372036854775,true,false,null]}"#,
            #"{"nested":{"deep":{"x":"y"}},"empty":{},"list":[],"s":""}"#,
            #"{"escapes":"quote \" backslash \\ newline \n tab \t cr \r bs \b ff \f"}"#,
            "{\"unicode\":\"é ü 日本 🎉 \u{7F}\"}",
            #"[1,2,3]"#, #""just a string""#, "42", "true", "null",
        ] {
            #expect(canonical(text), "\(text)")
        }
    }

    @Test func textTheWriterWouldWriteDifferentlyIsNot() {
        for text in [
            #"{"a": 1}"#, #" {"a":1}"#, #"{"a":1} "#, "{\"a\":1}\r", #"[1, 2]"#,  // whitespace
            #"{"a":1,"a":2}"#, #"{"k":{"x":1,"x":1}}"#, #"{"abcdefghij":1,"abcdefghij":2}"#,  // duplicate keys
            #"{"é":1}"#,  // a non-ASCII key: Swift compares those by canonical equivalence
            "-0", "1.50", "1e5", "1E5", "1.0e1", "0.00001", "1234567890123456.5", "0.1234567890123456",
            "12345678901234567890",  // not an Int64
            #""\u0041""#, #""\/""#, #""\u00e9""#,  // escapes the writer does not write
        ] {
            #expect(!canonical(text), "\(text)")
        }
    }

    /// A scanner starts with room for one object's keys and grows it to 1,024 keys open at once for the first text
    /// that needs more: nested objects of 64 keys each are still checked for repeats at every level.
    @Test func objectsOpenAtOnceMayHoldManyKeys() {
        func object(_ prefix: String, _ count: Int, last: String = "") -> String {
            "{" + (0..<count).map { "\"\(prefix)\($0)\":\($0)" }.joined(separator: ",") + last + "}"
        }
        // 64, 64 and 64 keys open at once, then 15 levels of 64 (960 keys open), then 17 (over the 1,024).
        let three = object("a", 63, last: ",\"b\":" + object("b", 63, last: ",\"c\":" + object("c", 64)))
        #expect(canonical(three))
        #expect(!canonical(three.replacingOccurrences(of: "\"c63\"", with: "\"c62\"")), "a repeat at the third level")
        #expect(!canonical(three.replacingOccurrences(of: "\"b62\"", with: "\"b61\"")), "a repeat at the second level")
        func nested(_ levels: Int) -> String {
            (0..<levels).reversed().reduce("1") { inner, level in
                object("k\(level)_", 63, last: ",\"next\":" + inner)
            }
        }
        #expect(canonical(nested(16)))
        #expect(!canonical(nested(17)), "1,088 keys open at once")
        // One scanner: small text after the large, and the large again.
        var scanner = CanonicalJSONScanner()
        for text in [#"{"a":1}"#, three, #"{"a":1}"#, nested(16), nested(17), three] {
            let accepted = Array(text.utf8).withUnsafeBufferPointer { scanner.isCanonical($0) }
            #expect(accepted == (text != nested(17)))
        }
    }

    @Test func invalidTextIsNever() {
        for text in [
            "", "{", "}", #"{"a"}"#, #"{"a":}"#, #"{"a":1,}"#, "[1,]", "01", "1.", ".5", "-", "tru", "nul",
            #""abc"#, "\"a\u{1}\"", #"{"a":1}x"#, "[1]]", "NaN",
        ] {
            #expect(!canonical(text), "\(text)")
        }
        var scanner = CanonicalJSONScanner()
        for bytes: [UInt8] in [
            [0x22, 0xC3, 0x22],  // truncated sequence
            [0x22, 0xC0, 0xAF, 0x22],  // overlong '/'
            [0x22, 0xED, 0xA0, 0x80, 0x22],  // encoded surrogate
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // above U+10FFFF
            [0x22, 0xFF, 0x22],
        ] {
            #expect(!bytes.withUnsafeBufferPointer { scanner.isCanonical($0) })
        }
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect(!canonical(deep))
    }

    /// Every file of JSONTestSuite: what the scanner accepts parses and is written back byte for byte.
    @Test(.enabled(if: JSONTestSuiteCorpus.isPresent, JSONTestSuiteCorpus.absence))
    func theConformanceCorpusNeverFoolsTheScanner() throws {
        var scanner = CanonicalJSONScanner()
        var accepted = 0
        for name in JSONTestSuiteCorpus.files {
            let bytes = try JSONTestSuiteCorpus.bytes(name)
            guard bytes.withUnsafeBufferPointer({ scanner.isCanonical($0) }) else { continue }
            accepted += 1
            let value = try JSONReader.parse(bytes)
            var written: [UInt8] = []
            JSONWriter.write(value, to: &written)
            #expect(written == bytes, "\(name)")
            #expect(!name.hasPrefix("n_"), "\(name)")
        }
        #expect(accepted > 20)
    }

    /// Doubles as the simulator rounds them, in their shortest form: canonical whenever they have at most 15
    /// significant digits and no exponent, and always written back as they are.
    @Test func shortestDoublesAreCanonical() {
        var generator = SplitMix64(seed: 7)
        var accepted = 0
        for _ in 0..<20_000 {
            let digits = Int(generator.next() % 7)
            let magnitude =
                Double(Int64(generator.next() % 2_000_000_000) - 1_000_000_000) / pow(10, Double(digits + 3))
            let text = magnitude.description
            if canonical(text) { accepted += 1 }
        }
        #expect(accepted > 19_000)
    }

    @Test func fieldsReadFromTextEqualFieldsOfTheValue() throws {
        let text = #"{"a":{"b":[10,{"c":"x\"y,}]"}],"e\"q":1},"s":"{\"a\":2}","n":-1.5,"t":true,"z":null,"last":[]}"#
        let event = Event(canonicalJSON: Array(text.utf8))
        let value = try JSONReader.parse(text)
        let paths: [[PathStep]] = [
            [.key("a")], [.key("a"), .key("b")], [.key("a"), .key("b"), .index(0)], [.key("a"), .key("b"), .index(-1)],
            [.key("a"), .key("b"), .index(1), .key("c")], [.key("a"), .key("b"), .index(2)], [.key("a"), .key("e\"q")],
            [.key("s")], [.key("s"), .key("a")], [.key("n")], [.key("t")], [.key("z")], [.key("last")],
            [.key("last"), .index(0)], [.key("missing")], [.key("n"), .key("x")], [], [.key("é")], [.key("\u{212A}")],
        ]
        for path in paths {
            #expect(event.lookup(path) == Event(value).lookup(path), "\(path)")
        }
        #expect(event.isText)
    }

    /// Any text the writer writes (exponents, `\u` escapes, nesting) reads back the same fields, and sets append
    /// fields that read back too.
    @Test func writtenValuesReadBackFieldByField() throws {
        var generator = SplitMix64(seed: 11)
        func scalar() -> JSONValue {
            switch generator.next() % 7 {
            case 0: .int(Int64(bitPattern: generator.next()) >> (generator.next() % 60))
            case 1:
                .double(
                    Double(Int64(generator.next() % 2_000_000) - 1_000_000)
                        * pow(10, Double(generator.next() % 40) - 20))
            case 2:
                .string(
                    String(
                        decoding: (0..<generator.next() % 6).map { _ in UInt8(generator.next() % 128) }, as: UTF8.self))
            case 3: .bool(generator.next() % 2 == 0)
            case 4: .null
            case 5: .array((0..<generator.next() % 3).map { _ in .int(Int64(generator.next() % 100)) })
            default: ["in\"ner": .double(1e-9), "x": [.string("}]"), .null]]
            }
        }
        for _ in 0..<2_000 {
            var object = JSONObject()
            for index in 0..<Int(generator.next() % 12) { object["k\(index)"] = scalar() }
            let value = JSONValue.object(object)
            let text = Array(JSONWriter.string(value).utf8)
            // With what the scanner says about it when it accepts the text (key signature, flatness), else nothing.
            var scanner = CanonicalJSONScanner()
            let scanned = text.withUnsafeBufferPointer { scanner.isCanonical($0) }
            var event = Event(
                canonicalJSON: text, topLevelKeys: scanned ? scanner.topLevelKeys : .unknown,
                isFlat: scanned && scanner.isFlat)
            for field in object.fields {
                #expect(event.lookup([.key(field.key)]) == field.value, "\(JSONWriter.string(value)) \(field.key)")
            }
            #expect(event.lookup([.key("absent")]) == nil)
            let added = scalar()
            try event.set(try #require(EventPath("added")), to: added)
            #expect(event.isText && event.lookup([.key("added")]) == added)
            object["added"] = added
            #expect(event.value == .object(object))
        }
    }

    /// Flat text (an object of scalars, no backslash) is searched for `"key":` directly: names inside values,
    /// keys that end with the name, and a name at the very start or end must not fool it.
    @Test func flatTextIsSearchedDirectly() throws {
        var scanner = CanonicalJSONScanner()
        func event(_ text: String) -> Event {
            let bytes = Array(text.utf8)
            #expect(bytes.withUnsafeBufferPointer { scanner.isCanonical($0) }, "\(text)")
            return Event(canonicalJSON: bytes, topLevelKeys: scanner.topLevelKeys, isFlat: scanner.isFlat)
        }
        let tricky = event(#"{"note":"t:","xt":1,"s":"\"t\"","t":2,"tt":"t","u":"{\"t\":3}"}"#)
        #expect(!scanner.isFlat)
        let flat = event(#"{"note":"t","xt":1,"s":"t:","t":2,"tt":"t:"}"#)
        #expect(scanner.isFlat)
        for candidate in [tricky, flat] {
            for key in ["t", "xt", "tt", "note", "s", "u", "absent"] {
                #expect(candidate.lookup([.key(key)]) == Event(candidate.value).lookup([.key(key)]), "\(key)")
            }
        }
        for (text, isFlat) in [
            (#"{"a":1}"#, true), (#"{"a":[1]}"#, false), (#"{"a":{}}"#, false), (#"[1]"#, false), ("1", false),
            (#"{"a":"x\ny"}"#, false), (#"{"a":"{[ inside a string ]}"}"#, true), ("{}", true),
        ] {
            _ = event(text)
            #expect(scanner.isFlat == isFlat, "\(text)")
        }
        // Appending keeps the text flat only while what is appended is flat too.
        var growing = event(#"{"a":1}"#)
        try growing.set(try #require(EventPath("b")), to: "plain")
        try growing.set(try #require(EventPath("c")), to: [1, 2])
        try growing.set(try #require(EventPath("d")), to: 4)
        #expect(growing.isText)
        for key in ["a", "b", "c", "d"] { #expect(growing.lookup([.key(key)]) == growing.value[key], "\(key)") }
    }

    /// A scanner compares each line's top-level keys with the last line's: one scanner reading 20,000 related lines
    /// (the same keys in the same order, one changed, dropped, added, repeated, escaped, or a prefix of another;
    /// nested objects with the same names) must say of each exactly what a fresh scanner, which has nothing to
    /// compare with, says: canonical or not, the same key signature, flat or not.
    @Test func aScannerThatRemembersTheLastKeysJudgesEveryLineAsAFreshOneDoes() {
        var generator = SplitMix64(seed: 17)
        let names = ["a", "ab", "device", "devicf", "temperature", "temperaturf", "t\\\"q", "longer_than_eight"]
        var remembering = CanonicalJSONScanner()
        var keys = ["device", "temperature", "a", "longer_than_eight"]
        var agreed = 0
        for line in 0..<20_000 {
            switch generator.next() % 10 {
            case 0: keys[Int(generator.next() % UInt64(keys.count))] = names[Int(generator.next() % 8)]
            case 1 where keys.count > 1: keys.removeLast()
            case 2 where keys.count < 8: keys.append(names[Int(generator.next() % 8)])
            case 3: keys.swapAt(0, keys.count - 1)
            default: break
            }
            let fields = keys.enumerated().map { index, key -> String in
                let value: String
                switch (line + index) % 5 {
                case 0: value = "\(line)"
                case 1: value = "\"v\(line % 7)\""
                case 2: value = #"{"device":1,"a":[true,null]}"#
                case 3: value = "12.5"
                default: value = line % 3 == 0 ? "\"\\n\"" : "false"
                }
                return "\"\(key)\":\(value)"
            }
            let text = Array(("{" + fields.joined(separator: ",") + "}").utf8)
            var fresh = CanonicalJSONScanner()
            let (remembered, alone) = text.withUnsafeBufferPointer {
                (remembering.isCanonical($0), fresh.isCanonical($0))
            }
            #expect(remembered == alone, "\(String(decoding: text, as: UTF8.self))")
            if alone {
                #expect(remembering.topLevelKeys == fresh.topLevelKeys, "\(String(decoding: text, as: UTF8.self))")
                #expect(remembering.isFlat == fresh.isFlat, "\(String(decoding: text, as: UTF8.self))")
                agreed += 1
            }
        }
        // Both kinds occur: lines with a key twice are not canonical.
        #expect(agreed > 5_000 && agreed < 19_000)
    }

    /// One locator reading event after event, as a stage does: the field where it was in the last event, a few
    /// bytes before or after, far before or after (beyond where the search near the last place looks), missing, or
    /// behind names and values that hold its name. Values and numbers read in place equal the parsed event's.
    @Test func aFieldIsFoundWhereverItMovedFromEventToEvent() throws {
        var scanner = CanonicalJSONScanner()
        var locator = FieldLocator("t")
        var generator = SplitMix64(seed: 5)
        // Found by fuzzing: the empty key, which a search for the key's bytes cannot find.
        let empty = Array(#"{"":0}"#.utf8)
        #expect(empty.withUnsafeBufferPointer { scanner.isCanonical($0) } && scanner.isFlat)
        let emptyKey = Event(canonicalJSON: empty, topLevelKeys: scanner.topLevelKeys, isFlat: true)
        var emptyLocator = FieldLocator("")
        #expect(emptyKey.lookup([.key("")]) == 0 && emptyKey.lookup(&emptyLocator) == 0)
        #expect(emptyKey.scalar(&emptyLocator) == .int(0))
        let values = ["2", "-17", "3.25", "-0.5", "true", "false", "null", "\"t\"", "123456789012345678"]
        for round in 0..<400 {
            // Fillers before the field: none, short, or longer than the search's slack.
            let length = generator.next() % 5 == 0 ? 60 + generator.next() % 40 : generator.next() % 8
            let padding = String(repeating: "x", count: Int(length))
            let value = values[Int(generator.next() % UInt64(values.count))]
            let text =
                round % 13 == 0
                ? #"{"a":"\#(padding)","tt":1,"t:":2}"#
                : #"{"a":"\#(padding)","xt":"t","s":"t:","t":\#(value),"tt":4}"#
            let bytes = Array(text.utf8)
            #expect(bytes.withUnsafeBufferPointer { scanner.isCanonical($0) }, "\(text)")
            #expect(scanner.isFlat)
            var event = Event(canonicalJSON: bytes, topLevelKeys: scanner.topLevelKeys, isFlat: true)
            let parsed = Event(event.value)
            #expect(event.lookup(&locator) == parsed.lookup([.key("t")]), "\(text)")
            #expect(event.scalar(&locator) == parsed.lookup([.key("t")]).flatMap(Scalar.init), "\(text)")
            // A number the map appended with an exponent is read by the JSON reader, never half by this one.
            if round % 7 == 0 {
                try event.set(try #require(EventPath("e")), to: .double(4.4e-05))
                var appended = FieldLocator("e")
                #expect(event.isText && event.scalar(&appended) == nil)
                #expect(event.lookup(&appended) == .double(4.4e-05))
            }
        }
    }

    /// A number read in place equals the JSON reader's, whatever its length: integers of 1 to 19 digits and decimals
    /// of 1 to 9 digits either side of the point, signed or not, read where eight or more bytes follow its start
    /// (one load for the whole part, one for the fraction) and where fewer do (byte by byte), and with a digit or a
    /// point where the load's eighth byte falls.
    @Test func numbersOfEveryLengthReadInPlaceAsTheReaderReadsThem() throws {
        var scanner = CanonicalJSONScanner()
        var locators = (middle: FieldLocator("v"), last: FieldLocator("w"))
        var generator = SplitMix64(seed: 23)
        // `count` random digits; a whole part of more than one starts with 1 to 9.
        func digits(_ count: Int, whole: Bool) -> String {
            (0..<count).map { index in
                String(whole && index == 0 && count > 1 ? 1 + generator.next() % 9 : generator.next() % 10)
            }.joined()
        }
        var read = 0
        for whole in 1...19 {
            for fraction in 0...9 where fraction == 0 || whole <= 9 {
                for _ in 0..<12 {
                    var number = (generator.next() % 2 == 0 ? "" : "-") + digits(whole, whole: true)
                    if fraction > 0 { number += "." + digits(fraction, whole: false) }
                    let value = try JSONReader.parse(Array(number.utf8))
                    // Only what the writer writes is event text (no `-0`, no trailing zero, no exponent).
                    guard JSONWriter.string(value) == number else { continue }
                    let text = #"{"v":\#(number),"n":"t:","w":\#(number)}"#
                    let bytes = Array(text.utf8)
                    // The scanner leaves to the reader what this reader would too: 19 digits, or more than 15 with a
                    // point.
                    guard bytes.withUnsafeBufferPointer({ scanner.isCanonical($0) }) else {
                        #expect(whole == 19 || whole + fraction > 15, "\(text)")
                        continue
                    }
                    // Flat, so that a number is read by the reader under test.
                    #expect(scanner.isFlat, "\(text)")
                    let event = Event(canonicalJSON: bytes, topLevelKeys: scanner.topLevelKeys, isFlat: scanner.isFlat)
                    let expected = Scalar(value)
                    #expect(event.scalar(&locators.middle) == expected, "\(text)")
                    #expect(event.scalar(&locators.last) == expected, "\(text)")
                    read += 1
                }
            }
        }
        #expect(read > 1_000)
    }

    /// A value in flat text ends where its text does, however long it is and wherever the eight-byte words the
    /// search reads fall: strings of 0 to 40 characters (the first two words are searched in place, the rest by
    /// `memchr`), numbers of 1 to 18 digits and literals, each in the middle and at the end of the object, after
    /// keys of every offset, read in place by a locator that remembers where they were, equal to the parsed value's.
    @Test func flatValuesOfEveryLengthAreReadWhole() throws {
        var scanner = CanonicalJSONScanner()
        var locators = (middle: FieldLocator("v"), last: FieldLocator("w"))
        for padding in 0..<9 {
            for length in 0...40 {
                let string = "\"" + String(repeating: "s", count: length) + "\""
                // Integers of up to 18 digits are canonical; longer ones the writer writes as doubles.
                let number = length == 0 ? "0" : "-" + String(repeating: "7", count: min(length, 18))
                let literal = ["true", "false", "null", "2.5"][length % 4]
                for value in [string, number, literal] {
                    let pad = String(repeating: "p", count: padding)
                    let text = #"{"\#(pad)":1,"v":\#(value),"n":"t:","w":\#(value)}"#
                    let bytes = Array(text.utf8)
                    #expect(bytes.withUnsafeBufferPointer { scanner.isCanonical($0) } && scanner.isFlat, "\(text)")
                    let event = Event(canonicalJSON: bytes, topLevelKeys: scanner.topLevelKeys, isFlat: true)
                    let expected = try JSONReader.parse(Array(value.utf8))
                    #expect(event.lookup(&locators.middle) == expected, "\(text)")
                    #expect(event.lookup(&locators.last) == expected, "\(text)")
                    #expect(event.lookup([.key("v")]) == expected, "\(text)")
                }
            }
        }
    }

    /// Text lines become `{"message": ...}` text, exactly what the writer writes for that value; its field reads
    /// back, flat or not (quotes, backslashes, control characters, invalid UTF-8 replaced).
    @Test func textLinesReadBackTheirMessage() throws {
        var scanner = CanonicalJSONScanner()
        let lines: [([UInt8], String)] =
            [
                "plain ERROR line", #"with "quotes" and \ backslash"#, "tab\there\r", "é and 🎉", "",
                "a longer line with a \"quote\" well past the first eight bytes", "control \u{01} and \u{1F} bytes",
            ].map { (Array($0.utf8), String($0.hasSuffix("\r") ? $0.dropLast() : Substring($0))) }
            + [([0x61, 0xFF, 0x62, 0xC3], "a\u{FFFD}b\u{FFFD}")]
        for (bytes, expected) in lines {
            var event = try bytes.withUnsafeBufferPointer {
                try EventDecoding.text.decodeEvent($0, scanner: &scanner, ingestNanos: 0)
            }
            #expect(event.isText)
            var written: [UInt8] = []
            event.writeJSON(to: &written)
            #expect(String(decoding: written, as: UTF8.self) == JSONWriter.string(["message": .string(expected)]))
            #expect(event.lookup([.key("message")]) == .string(expected), "\(expected)")
            var message: [UInt8] = []
            #expect(event.appendString(at: [.key("message")], to: &message))
            #expect(String(decoding: message, as: UTF8.self) == expected)
            #expect(event.lookup([.key("other")]) == nil)
            #expect(!event.appendString(at: [.key("other")], to: &message))
            try event.set(try #require(EventPath("level")), to: "error")
            #expect(event.value == ["message": .string(expected), "level": "error"])
        }
    }

    /// Only code in this package can give an event unchecked text; text that breaks the rules (cut short, with a
    /// wrong flatness claim, or damaged) must still never be read outside its bytes: fields are missing or wrong,
    /// and nothing traps. (Under `scripts/sanitize address` an out-of-bounds read is reported as well.)
    @Test func brokenTextIsNeverReadOutsideItsBytes() throws {
        let samples = [
            #"{"a":{"b":[10,{"c":"x\"y,}]"}],"e":1},"s":"{\"a\":2}","n":-1.5e-07,"t":true,"z":null,"last":[]}"#,
            #"{"device":"d-1","seq":12,"temp":23.5,"ok":false}"#,
            #"[1,[2,{"k":"v"}],"s"]"#,
        ]
        let paths: [[PathStep]] = [
            [.key("a")], [.key("a"), .key("b"), .index(1), .key("c")], [.key("a"), .key("b"), .index(-1)],
            [.key("s")], [.key("seq")], [.key("temp")], [.key("ok")], [.key("last"), .index(0)], [.index(1)],
            [.index(1), .index(1), .key("k")], [.index(-1)], [.key("missing")],
        ]
        var damaged: [[UInt8]] = []
        for sample in samples {
            let bytes = Array(sample.utf8)
            for length in 1...bytes.count { damaged.append(Array(bytes.prefix(length))) }
            for index in bytes.indices {
                for replacement in [UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "}"), UInt8(ascii: ",")] {
                    var copy = bytes
                    copy[index] = replacement
                    damaged.append(copy)
                }
            }
        }
        var lookups = 0
        for text in damaged {
            for flat in [false, true] {
                var event = Event(canonicalJSON: text, isFlat: flat)
                for path in paths {
                    _ = event.lookup(path)
                    lookups += 1
                }
                // Appending to text that does not end its object is refused (the event is parsed instead).
                try? event.set(try #require(EventPath("added")), to: 1)
            }
        }
        #expect(lookups == damaged.count * 2 * paths.count)
        // A value cut short is never found whole.
        let cut = Event(canonicalJSON: Array(#"{"a":"unterminated"#.utf8))
        #expect(cut.lookup([.key("a")]) == nil)
        #expect(Event(canonicalJSON: Array(#"{"a":[1,2"#.utf8)).lookup([.key("a"), .index(1)]) == nil)
    }

    /// The public way to make an event from bytes checks them: canonical text is kept, anything else parsed, and
    /// invalid JSON refused.
    @Test func eventsFromJSONBytesAreChecked() throws {
        let canonical = try Event(json: Array(#"{"a":1,"b":"x"}"#.utf8))
        #expect(canonical.isText && canonical.lookup([.key("b")]) == "x")
        let spaced = try Event(json: Array(#"{ "a" : 1 }"#.utf8))
        #expect(!spaced.isText && spaced.value == ["a": 1])
        for invalid in [#"{"a":"#, "", "{} {}", #"{"a":1"#] {
            #expect(throws: JSONError.self, "\(invalid)") { try Event(json: Array(invalid.utf8)) }
        }
    }

    /// The scanner's key signature never says a key is missing that the text has (a lookup would find nothing, and
    /// a map would append the key a second time), for keys landing on every one of its bits; and it rules out most
    /// keys the text lacks, which a map then appends without searching the text for them.
    @Test func theKeySignatureHoldsEveryKeyTheTextHasAndRulesOutMostOthers() throws {
        var random = SplitMix64(seed: 12)
        var ruledOut = 0
        for round in 0..<300 {
            var keys: [String] = []
            for _ in 0..<(1 + random.next() % 40) {
                let key = "k\(random.next() % 1_000_000)"
                if !keys.contains(key) { keys.append(key) }
            }
            let text = Array(("{" + keys.map { "\"\($0)\":1" }.joined(separator: ",") + "}").utf8)
            var scanner = CanonicalJSONScanner()
            #expect(text.withUnsafeBufferPointer { scanner.isCanonical($0) })
            let event = Event(canonicalJSON: text, topLevelKeys: scanner.topLevelKeys, isFlat: scanner.isFlat)
            for key in keys {
                var locator = FieldLocator(key)
                #expect(event.lookup(&locator) == 1, "\(key) in \(keys)")
            }
            var absent = "absent\(round)"
            if absent.withUTF8({ !scanner.topLevelKeys.mayContain($0) }) { ruledOut += 1 }
        }
        // Two bits of 192 per key, 1 to 40 keys: 17 absent keys of these 300 get through (34 with one bit per key,
        // every one with none).
        #expect(ruledOut >= 280)
    }

    /// A map's set appends `"key":value` with the key written as one or two words of its pattern up to 16 bytes
    /// (quotes and colon included) and byte by byte beyond: keys of 0 to 20 bytes, with integers, doubles, a
    /// double only `description` writes, and booleans, give the bytes the writer writes for the object.
    @Test func aFieldAppendedByItsLocatorIsWhatTheWriterWrites() throws {
        let values: [Scalar] = [.int(7), .int(-1_234_567_890_123), .double(0.25), .double(1e-9), .bool(false)]
        for length in 0...20 {
            let key = String((0..<length).map { Character(UnicodeScalar(UInt8(ascii: "a") + UInt8($0 % 26))) })
            var locator = FieldLocator(key)
            for value in values {
                let base: JSONValue = ["device": "d-1", "seq": 12]
                var event = Event(canonicalJSON: Array(JSONWriter.string(base).utf8))
                #expect(event.appendField(&locator, scalar: value), "\(key)")
                var expected = JSONObject(uniqueFields: [
                    JSONObject.Field(key: "device", value: "d-1"), JSONObject.Field(key: "seq", value: 12),
                ])
                expected[key] = value.value
                var written: [UInt8] = []
                event.writeJSON(to: &written)
                #expect(String(decoding: written, as: UTF8.self) == JSONWriter.string(.object(expected)), "\(key)")
                // The field is there now: a second append is refused.
                #expect(!event.appendField(&locator, scalar: value))
            }
        }
    }

    @Test func settingANewFieldAppendsToTheTextAndAnOldOneParses() throws {
        var event = Event(canonicalJSON: Array(#"{"a":1}"#.utf8), ingestNanos: 5)
        try event.set(try #require(EventPath("b")), to: .string("x\n"))
        #expect(event.isText)
        var written: [UInt8] = []
        event.writeJSON(to: &written)
        #expect(String(decoding: written, as: UTF8.self) == #"{"a":1,"b":"x\n"}"#)

        var empty = Event(canonicalJSON: Array("{}".utf8))
        try empty.set(try #require(EventPath("k")), to: 1)
        #expect(empty.isText && empty.value == ["k": 1])

        // Numbers, booleans and null go in with their key in one append: the bytes the writer writes.
        var scalars = Event(canonicalJSON: Array("{}".utf8))
        let values: [(String, JSONValue)] = [
            ("i", .int(-9_223_372_036_854_775_808)), ("j", 0), ("d", .double(-0.5)), ("e", 23.0),
            ("f", .double(1e-7)), ("t", true), ("n", .null),
        ]
        for (key, value) in values { try scalars.set(try #require(EventPath(key)), to: value) }
        written.removeAll()
        scalars.writeJSON(to: &written)
        #expect(scalars.isText)
        #expect(
            String(decoding: written, as: UTF8.self)
                == #"{"i":-9223372036854775808,"j":0,"d":-0.5,"e":23.0,"f":1e-07,"t":true,"n":null}"#)
        let object = JSONObject(uniqueFields: values.map { JSONObject.Field(key: $0.0, value: $0.1) })
        #expect(written == Array(JSONWriter.string(.object(object)).utf8))

        try event.set(try #require(EventPath("a")), to: 2)
        #expect(!event.isText)
        #expect(event.value == ["a": 2, "b": "x\n"])
        #expect(event == Event(["a": 2, "b": "x\n"], ingestNanos: 5))

        var nested = Event(canonicalJSON: Array(#"{"a":1}"#.utf8))
        try nested.set(try #require(EventPath("p.q")), to: true)
        #expect(nested.value == ["a": 1, "p": ["q": true]])

        // A value with a non-ASCII key inside is not appended to the text: the event is parsed instead.
        var unicode = Event(canonicalJSON: Array(#"{"a":1}"#.utf8))
        try unicode.set(try #require(EventPath("u")), to: ["\u{212A}": 1])
        #expect(!unicode.isText && unicode.value == ["a": 1, "u": ["\u{212A}": 1]])

        var array = Event(canonicalJSON: Array("[1]".utf8))
        #expect(throws: EvaluationError("cannot set b: the event is an array, not an object")) {
            try array.set(try #require(EventPath("b")), to: 1)
        }
    }
}
