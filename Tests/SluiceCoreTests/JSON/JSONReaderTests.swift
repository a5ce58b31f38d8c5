import SluiceCore
import SluiceTesting
import Testing

struct JSONReaderTests {
    @Test func integersStayIntegersAndOtherNumbersAreDoubles() throws {
        #expect(try JSONReader.parse("42") == .int(42))
        #expect(try JSONReader.parse("-9223372036854775808") == .int(Int64.min))
        #expect(try JSONReader.parse("9223372036854775807") == .int(Int64.max))
        #expect(try JSONReader.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try JSONReader.parse("123456789012345678901234567890") == .double(1.2345678901234568e29))
        #expect(try JSONReader.parse("1.5") == .double(1.5))
        #expect(try JSONReader.parse("2e3") == .double(2000))
        #expect(try JSONReader.parse("0.1") == .double(0.1))
        #expect(try JSONReader.parse("-0") == .int(0))
        #expect(try JSONReader.parse("1.7976931348623157e308") == .double(.greatestFiniteMagnitude))
        #expect(try JSONReader.parse("2.2250738585072014e-308") == .double(2.2250738585072014e-308))
        #expect(try JSONReader.parse("0.30000000000000004") == .double(0.30000000000000004))
    }

    @Test func numbersTooLargeForADoubleAreErrors() {
        #expect(throws: JSONError.self) { try JSONReader.parse("1e999") }
        #expect(throws: JSONError.self) { try JSONReader.parse("-1e400") }
    }

    @Test func objectsKeepKeyOrderAndTheLastDuplicateWins() throws {
        let value = try JSONReader.parse(#"{"z":1,"a":2,"z":3}"#)
        guard case .object(let object) = value else {
            Issue.record("expected an object")
            return
        }
        #expect(object.fields.map(\.key) == ["z", "a"])
        #expect(object["z"] == .int(3))
        let many = "{" + (0..<100).map { "\"k\($0 % 50)\":\($0)" }.joined(separator: ",") + "}"
        guard case .object(let large) = try JSONReader.parse(many) else {
            Issue.record("expected an object")
            return
        }
        #expect(large.count == 50)
        #expect(large["k0"] == .int(50))
    }

    @Test func stringsDecodeEscapesAndUnicode() throws {
        #expect(try JSONReader.parse(#""a\"b\\c\/d\n\t\u00e9\ud83d\ude00""#) == .string("a\"b\\c/d\n\té😀"))
        #expect(try JSONReader.parse("\"日本語\"") == .string("日本語"))
        #expect(try JSONReader.parse(#""\ud800""#) == .string("\u{FFFD}"))
    }

    @Test func invalidUTF8IsAnError() {
        #expect(throws: JSONError.self) { try JSONReader.parse([0x22, 0xFF, 0x22]) }
        #expect(throws: JSONError.self) { try JSONReader.parse([0x22, 0xC3, 0x22]) }
    }

    @Test func errorsSayWhatAndWhere() {
        #expect(throws: JSONError("unexpected 'x' after the JSON value", at: 3)) { try JSONReader.parse("{} x") }
        #expect(throws: JSONError("a number may not have a leading zero", at: 1)) { try JSONReader.parse("01") }
        #expect(throws: JSONError("expected a JSON value, found no input", at: 0)) { try JSONReader.parse("  ") }
        #expect(throws: JSONError("unterminated string", at: 0)) { try JSONReader.parse("\"abc") }
        #expect(throws: JSONError("unexpected end of input in an array", at: 2)) {
            try JSONReader.parse("[1")
        }
    }

    @Test func deepNestingIsLimitedNotACrash() throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONError("nesting deeper than 512 levels", at: 512)) { try JSONReader.parse(deep) }
        let allowed = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(throws: Never.self) { try JSONReader.parse(allowed) }
    }
}

struct JSONWriterTests {
    @Test func writesCompactJSON() {
        let value: JSONValue = ["b": 1, "a": [true, false, nil], "c": 2.5, "d": "x"]
        #expect(JSONWriter.string(value) == #"{"b":1,"a":[true,false,null],"c":2.5,"d":"x"}"#)
        #expect(JSONWriter.string(.int(Int64.min)) == "-9223372036854775808")
        #expect(JSONWriter.string(.double(1e300)) == "1e+300")
    }

    /// Digits are written two at a time: every count of digits, both signs, the ends of the range and seeded
    /// integers of every magnitude are written as `description` writes them.
    @Test func integersAreWrittenAsDescriptionWritesThem() {
        var values: [Int64] = [0, .min, .min + 1, .max]
        var power: Int64 = 1
        for digits in 1...19 {
            values += [power, power - 1, power + 1, -power, 1 - power]
            if digits < 19 { power *= 10 }
        }
        var generator = SplitMix64(seed: 43)
        for _ in 0..<100_000 {
            let bits = generator.next()
            values.append(Int64(bitPattern: bits) >> (bits % 64))
        }
        for value in values {
            #expect(JSONWriter.string(.int(value)) == String(value))
        }
    }

    @Test func escapesExactlyWhatJSONRequires() {
        #expect(JSONWriter.string("q\"b\\n\n\t\u{1}é/") == #""q\"b\\n\n\t\u0001é/""#)
    }

    @Test func roundTripKeepsOrderUnicodeAndIntegers() throws {
        let text = #"{"zeta":"日本","alpha":[1,-2,3.25,{"x":null}],"big":9007199254740993}"#
        #expect(JSONWriter.string(try JSONReader.parse(text)) == text)
    }
}
