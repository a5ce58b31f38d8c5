import SluiceCore
import SluiceTesting
import Testing

/// The numeric program (numbers and booleans read straight from event text) against the general program it
/// stands in for: the same value or, where it gives up, the general program's value or error.
struct NumericProgramTests {
    /// Expressions of every form the numeric program covers.
    static let numericExpressions = [
        ".a > 30", ".a * 9 / 5 + 32", ".a - .b", ".a % .b", ".a / .b", "-.a", "!.f", ".f == true", ".f != .a",
        ".a > 1 && .b < 2", ".a > 1 || .b", ".f ? .a : .b", ".a ?? 3", ".a == .b", ".a >= .b", ".a <= 2.5",
        ".a * .b", ".a + 1", "!(.a < .b) && .f", #"contains(.s, " ERR") || contains(.s, "7")"#,
        #"starts_with(.s, "ab") && .a > 1"#, #"ends_with(.s, "")"#, #"!contains(.a, "1")"#,
        #"matches(.s, "(?i)err\\b") && .a > 0"#, #"!matches(.a, "^1")"#, #"matches(.s, "^a") || .f"#,
        #".s == "abc""#, #".s != "ab ERR 7""#, #""7" == .s"#, #".s == "K""#, #".s == """#, ".a == null",
        "null != .s", ".f != null && .a > 1", "30 == .a", ".a != 1.5",
        // Each operator with a number on its right (compiled apart), dividing by zero too.
        ".a - 2", ".a - 0.5", ".a % 7", ".a % 0", ".a / 0", ".a * -3",
        // Operations with numbers in a row (compiled as one): overflowing to infinity and back, integer overflow,
        // a remainder, a zero divisor among them, a boolean.
        ".a * 1e307 * 100 - 1", ".a * 1e307 * 100 * 0", ".a + 9223372036854775000 - 1000 + 1000", ".a / 0.5 % 7 - 1",
        ".a * 2 / 0 + 1", ".a % 3 * 2 + 0.25", ".a + 1 + true",
    ]

    @Test func theCommonFormsHaveANumericProgramAndOthersDoNot() throws {
        for source in Self.numericExpressions {
            #expect(try Expression(source).hasNumericProgram, "\(source)")
        }
        for source in [".a", "length(.s) > 1", ".s == \"é\"", ".s < \"x\"", ".a.b == \"x\"", ".a.b > 1", ".a in [1, 2]"] {
            #expect(try !Expression(source).hasNumericProgram, "\(source)")
        }
    }

    /// Random events whose fields are integers (with overflow at the edges), doubles, zero, booleans, strings,
    /// null, missing, exponents and long digit strings, each with its text.
    static func randomEvents(_ count: Int, seed: UInt64) throws -> [(text: String, event: Event)] {
        var generator = SplitMix64(seed: seed)
        func field() -> String? {
            switch generator.next() % 12 {
            case 0: return nil
            case 1: return "null"
            case 2:
                // With strings `==` compares by canonical equivalence: the Kelvin sign is "K", and é is é either way.
                let strings = ["\"7\"", "\"ab ERR 7\"", "\"\"", #""a\" ERR""#, "\"abc\"", "\"\u{212A}\"", "\"K\"", "\"é\"", "\"e\u{301}\""]
                return strings[Int(generator.next() % UInt64(strings.count))]
            case 3: return generator.next() % 2 == 0 ? "true" : "false"
            case 4: return "0"
            case 5: return "9223372036854775807"
            case 6: return "-9223372036854775807"
            case 7: return "1.5e3"
            case 8: return "12345678901234567.5"
            case 9: return String(Int64(generator.next() % 2_001) - 1_000)
            default: return String(Double(Int64(generator.next() % 200_001) - 100_000) / 100)
            }
        }
        return try (0..<count).map { _ in
            var fields: [String] = []
            for name in ["a", "b", "f", "s"] {
                if let text = field() { fields.append("\"\(name)\":\(text)") }
            }
            let text = "{" + fields.joined(separator: ",") + "}"
            return (text, try Event(json: Array(text.utf8)))
        }
    }

    /// Every expression gives the same value or error both ways on random events.
    @Test func theNumericProgramAgreesWithTheGeneralOneOnRandomEvents() throws {
        let expressions = try Self.numericExpressions.map { try Expression($0) }
        var states = expressions.map { $0.makeState() }
        var generalStates = expressions.map { $0.makeState() }
        var numericValues = 0
        for (text, event) in try Self.randomEvents(3_000, seed: 23) {
            for index in expressions.indices {
                let fast = Result { () throws(EvaluationError) in try expressions[index].evaluate(event, &states[index])
                }
                let general = Result { () throws(EvaluationError) in
                    try expressions[index].evaluateByGeneralProgram(event, &generalStates[index])
                }
                #expect(fast == general, "\(expressions[index].source) on \(text)")
                if case .success(.int) = fast { numericValues += 1 }
            }
        }
        #expect(numericValues > 1_000)
    }

    /// Expressions run one after another through one state (a route's conditions), each field read once per event,
    /// give each what it gives alone, with the general program where its numeric one has nothing to say; the same
    /// fields are read by many of them, and by the same one twice.
    @Test func programsSharingTheirReadsAgreeWithEachAlone() throws {
        let expressions = try (Self.numericExpressions + [".a > 2 && .a < 900", "length(.s) > 1", ".a.b == 1", ".b"])
            .map { try Expression($0) }
        let programs = SharedNumericPrograms(expressions)
        var shared = programs.makeState()
        var ownStates = expressions.map { $0.makeState() }
        var aloneStates = expressions.map { $0.makeState() }
        var answeredShared = 0
        for (text, event) in try Self.randomEvents(3_000, seed: 29) {
            programs.begin(&shared)
            for index in expressions.indices {
                let together = Result { () throws(EvaluationError) -> JSONValue in
                    if let value = programs.run(index, event, &shared) {
                        answeredShared += 1
                        return value
                    }
                    return try expressions[index].evaluateByGeneralProgram(event, &ownStates[index])
                }
                let alone = Result { () throws(EvaluationError) in try expressions[index].evaluate(event, &aloneStates[index])
                }
                #expect(together == alone, "\(expressions[index].source) on \(text)")
            }
        }
        #expect(answeredShared > 20_000)
    }
}

/// Doubles are written as Swift's `description` writes them, with or without the fixed-point shortcut.
struct DoubleWritingTests {
    @Test func doublesAreWrittenExactlyAsDescriptionWritesThem() {
        var generator = SplitMix64(seed: 31)
        var shortcuts = 0
        var values: [Double] = [0, -0.0, 1e-4, 1e-4.nextDown, 1e-4.nextUp, 1e9, 1e9.nextDown, 0.1 + 0.2, 77.666, 1e-5]
        for _ in 0..<200_000 {
            let cents = Double(Int64(generator.next() % 2_000_001) - 1_000_000) / 100
            let scale = [1.0, 10, 1e-3, 1e5, 7][Int(generator.next() % 5)]
            values.append(cents * 9 / 5 + 32)
            values.append(cents / scale)
            values.append(Double(bitPattern: 0x3F00_0000_0000_0000 + generator.next() % 0x0300_0000_0000_0000))
        }
        for value in values {
            if JSONWriter.shortDecimal(value.magnitude) != nil { shortcuts += 1 }
            var bytes: [UInt8] = []
            JSONWriter.write(.double(value), to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == value.description)
        }
        #expect(shortcuts > 200_000, "the shortcut wrote \(shortcuts) of \(values.count)")
    }

    /// Every double whose shortest form has at most 15 significant digits, in every decade the shortcut covers,
    /// takes it and is written as `description` writes it; so are the decades' first doubles and their neighbours.
    @Test func decimalsOfUpTo15DigitsTakeTheShortcutInEveryDecade() {
        var generator = SplitMix64(seed: 37)
        var values: [Double] = []
        for decade in -4...8 {
            let start = Double("1e\(decade)")!
            values += [start, start.nextDown, start.nextUp]
        }
        for _ in 0..<100_000 {
            let digits = Int(generator.next() % 15) + 1
            var text = String(generator.next() % 9 + 1)
            for _ in 1..<digits { text += String(generator.next() % 10) }
            let decade = Int(generator.next() % 13) - 4
            // `d.ddd…e<decade>` read back: a double whose shortest form is those digits (or fewer, for zeros).
            let value = Double(text.prefix(1) + "." + text.dropFirst() + "e\(decade)")!
            values.append(value)
            #expect(JSONWriter.shortDecimal(value) != nil, "\(value) took no shortcut")
        }
        for value in values {
            var bytes: [UInt8] = []
            JSONWriter.write(.double(value), to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == value.description)
        }
    }
}
