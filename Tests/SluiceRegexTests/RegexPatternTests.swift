import SluiceRegex
import Testing

struct RegexPatternTests {
    @Test(arguments: [
        (#"(?i)\b(error|fatal)\b"#, "2026-11-30 ERROR service=api", true),
        (#"(?i)\b(error|fatal)\b"#, "no errors here", false),
        (#"\berror\b"#, "ERROR", false),
        (#"^\d{4}-\d{2}-\d{2}"#, "2026-11-30T12:00:00Z", true),
        (#"^\d{4}-\d{2}-\d{2}"#, "\tat com.example.Main", false),
        ("é+", "caf\u{E9}\u{E9}", true),
        ("^.$", "\u{1F600}", true),
        ("(?<=took=)\\d+ms", "req=1 took=87ms", true),
        ("", "", true),
        ("x", "", false),
    ])
    func matchesLikePCRE(pattern: String, subject: String, expected: Bool) throws {
        let matcher = try RegexPattern(pattern).makeMatcher()
        #expect(try matcher.matches(subject) == expected)
        // The same matcher again: its match data is reused.
        #expect(try matcher.matches(subject) == expected)
    }

    @Test func namedGroupsAndTheirRanges() throws {
        let pattern = try RegexPattern(#"(?<level>[A-Z]+) service=(?<service>\S+)(?: req=(?<request>\d+))?"#)
        #expect(pattern.groupCount == 3)
        #expect(pattern.namedGroups.map(\.name) == ["level", "service", "request"])
        #expect(pattern.namedGroups.map(\.number) == [1, 2, 3])
        let matcher = pattern.makeMatcher()
        let line = "12:00:01 ERROR service=api-3 took=87ms"
        #expect(try matcher.matches(line))
        let bytes = Array(line.utf8)
        func text(_ group: Int) -> String? {
            matcher.group(group).map { String(decoding: bytes[$0], as: UTF8.self) }
        }
        #expect(text(0) == "ERROR service=api-3")
        #expect(text(1) == "ERROR")
        #expect(text(2) == "api-3")
        #expect(text(3) == nil, "an optional group that did not take part")
        #expect(matcher.group(4) == nil)
    }

    @Test func mistakesNameTheProblemAndWhere() {
        for (pattern, message, offset) in [
            ("(error|fa", "missing closing parenthesis", 9), ("*x", "quantifier does not follow a repeatable item", 0),
        ] {
            #expect {
                try RegexPattern(pattern)
            } throws: { error in
                (error as? RegexError).map { $0.message == message && $0.byteOffset == offset } ?? false
            }
        }
    }

    /// Catastrophic backtracking stops at the match limit with an error instead of running for minutes.
    @Test func aHostileSubjectHitsTheMatchLimit() throws {
        let matcher = try RegexPattern("^(a+)+$").makeMatcher()
        let subject = String(repeating: "a", count: 40) + "!"
        #expect(throws: RegexMatchError.self) { try matcher.matches(subject) }
        #expect(try matcher.matches("aaaa"))
    }
}
