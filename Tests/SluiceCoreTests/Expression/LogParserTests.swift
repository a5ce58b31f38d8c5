import Testing

@testable import SluiceCore

/// The `parse_*` functions against the standards' own examples (RFC 5424 section 6.5, RFC 3164 section 5.4, the
/// Apache documentation's log formats) and the edge cases of each format.
struct LogParserTests {
    static func evaluate(_ source: String, _ text: String) throws -> JSONValue {
        try Expression(source).evaluate(["m": .string(text)])
    }

    static func object(_ json: String) throws -> JSONValue { try JSONReader.parse(json) }

    // MARK: - Syslog

    static let rfc5424: [(String, String)] = [
        (
            "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \u{FEFF}'su root' failed for lonvick on /dev/pts/8",
            #"{"facility":"auth","severity":"crit","version":1,"timestamp":"2003-10-11T22:14:15.003Z","host":"mymachine.example.com","app":"su","msg_id":"ID47","message":"'su root' failed for lonvick on /dev/pts/8"}"#
        ),
        (
            "<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It's time to make the do-nuts.",
            #"{"facility":"local4","severity":"notice","version":1,"timestamp":"2003-08-24T12:14:15.000Z","host":"192.0.2.1","app":"myproc","pid":8710,"message":"%% It's time to make the do-nuts."}"#
        ),
        (
            #"<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"] "#
                + "\u{FEFF}An application event log entry...",
            #"{"facility":"local4","severity":"notice","version":1,"timestamp":"2003-10-11T22:14:15.003Z","host":"mymachine.example.com","app":"evntslog","msg_id":"ID47","structured_data":{"exampleSDID@32473":{"iut":"3","eventSource":"Application","eventID":"1011"}},"message":"An application event log entry..."}"#
        ),
        (
            #"<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"]"#,
            #"{"facility":"local4","severity":"notice","version":1,"timestamp":"2003-10-11T22:14:15.003Z","host":"mymachine.example.com","app":"evntslog","msg_id":"ID47","structured_data":{"exampleSDID@32473":{"iut":"3","eventSource":"Application","eventID":"1011"},"examplePriority@32473":{"class":"high"}}}"#
        ),
    ]

    @Test(arguments: rfc5424.indices)
    func rfc5424Examples(_ index: Int) throws {
        let (line, expected) = Self.rfc5424[index]
        #expect(try Self.evaluate("parse_syslog(.m)", line) == Self.object(expected))
    }

    /// RFC 3164's examples, read on 2003-12-01 (its times have no year); the last two are the relayed forms with
    /// a year and a zone name, which the RFC shows as seen in the wild.
    static let rfc3164: [(String, String)] = [
        (
            "<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8",
            #"{"facility":"auth","severity":"crit","timestamp":"2003-10-11T22:14:15.000Z","host":"mymachine","app":"su","message":"'su root' failed for lonvick on /dev/pts/8"}"#
        ),
        (
            "<13>Feb  5 17:32:18 10.0.0.99 Use the BFG!",
            #"{"facility":"user","severity":"notice","timestamp":"2003-02-05T17:32:18.000Z","host":"10.0.0.99","message":"Use the BFG!"}"#
        ),
        (
            "<165>Aug 24 05:34:00 CST 1987 mymachine myproc[10]: %% It's time to make the do-nuts.  %%  Ingredients: Mix=OK, Jelly=OK # Devices: Mixer=OK, Jelly_Injector=OK, Frier=OK # Transport: Conveyer1=OK, Conveyer2=OK # %%",
            #"{"facility":"local4","severity":"notice","timestamp":"1987-08-24T05:34:00.000Z","timezone":"CST","host":"mymachine","app":"myproc","pid":10,"message":"%% It's time to make the do-nuts.  %%  Ingredients: Mix=OK, Jelly=OK # Devices: Mixer=OK, Jelly_Injector=OK, Frier=OK # Transport: Conveyer1=OK, Conveyer2=OK # %%"}"#
        ),
        (
            "<0>1990 Oct 22 10:52:01 TZ-6 scapegoat.dmz.example.org 10.1.2.3 sched[0]: That's All Folks!",
            #"{"facility":"kern","severity":"emerg","timestamp":"1990-10-22T10:52:01.000Z","timezone":"TZ-6","host":"scapegoat.dmz.example.org","message":"10.1.2.3 sched[0]: That's All Folks!"}"#
        ),
    ]

    @Test(arguments: rfc3164.indices)
    func rfc3164Examples(_ index: Int) throws {
        let (line, expected) = Self.rfc3164[index]
        #expect(try LogParsers.syslog(line, nowMillis: 1_070_236_800_000) == Self.object(expected))
    }

    /// Found by the generated corpus (`LogCorpusEndToEndTests`): capital host names are not zones, a Cisco
    /// mnemonic is not a tag, and a lone backslash in structured data is itself.
    @Test func devicesMnemonicsAndLoneBackslashes() throws {
        let router = try LogParsers.syslog("<115>Apr 30 13:23:39 ROUTER %LINK-3-UPDOWN: down", nowMillis: 0)
        #expect(router["host"] == "ROUTER")
        #expect(router["timezone"] == nil && router["app"] == nil)
        #expect(router["message"] == "%LINK-3-UPDOWN: down")
        let relayed = try LogParsers.syslog("<14>Apr 30 13:23:39 GMT+2 host postfix/smtpd[7]: x", nowMillis: 0)
        #expect(relayed["timezone"] == "GMT+2" && relayed["app"] == "postfix/smtpd" && relayed["pid"] == 7)
        let data = try Self.evaluate("parse_syslog(.m)", #"<14>1 - h a - - [x p="C:\temp\x" q="a\]b\\" r="C:\\tmp"]"#)
        #expect(data["structured_data"] == ["x": ["p": #"C:\temp\x"#, "q": #"a]b\"#, "r": #"C:\tmp"#]])
    }

    /// A time without a year that would lie more than a day ahead is last year's (read on New Year's Day).
    @Test func anRFC3164TimeNeverLiesInTheFuture() throws {
        let parsed = try LogParsers.syslog("<14>Dec 31 23:59:59 host app: late", nowMillis: 1_072_915_200_000)
        #expect(parsed["timestamp"] == "2003-12-31T23:59:59.000Z")
        let early = try LogParsers.syslog("<14>Jan  1 00:00:05 host app: early", nowMillis: 1_072_915_200_000)
        #expect(early["timestamp"] == "2004-01-01T00:00:05.000Z")
    }

    @Test(arguments: [
        "no priority", "<999>1 2003-10-11T22:14:15Z h a - - -", "<34>Foo 11 22:14:15 h x", "<34>1 yesterday h",
    ])
    func syslogMistakesAreErrors(_ line: String) {
        #expect(throws: EvaluationError.self) { try Self.evaluate("parse_syslog(.m)", line) }
    }

    // MARK: - Access logs

    @Test func apacheCommonAndCombinedExamples() throws {
        let common = #"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#
        let fields =
            #""host":"127.0.0.1","user":"frank","timestamp":"2000-10-10T20:55:36.000Z","method":"GET","path":"/apache_pb.gif","protocol":"HTTP/1.0","status":200,"size":2326"#
        #expect(try Self.evaluate("parse_common_log(.m)", common) == Self.object("{\(fields)}"))
        let combined = common + #" "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)""#
        #expect(
            try Self.evaluate("parse_combined_log(.m)", combined)
                == Self.object(
                    "{\(fields),"
                        + #""referer":"http://www.example.com/start.html","agent":"Mozilla/4.08 [en] (Win98; I ;Nav)"}"#
                ))
        // nginx writes "-" for no size and escapes quotes in the agent.
        let nginx = #"10.0.0.7 - - [30/Nov/2026:12:00:00 +0000] "POST /v1/items HTTP/2.0" 204 - "-" "curl/8.4 \"x\"""#
        #expect(
            try Self.evaluate("parse_combined_log(.m)", nginx)
                == Self.object(
                    #"{"host":"10.0.0.7","timestamp":"2026-11-30T12:00:00.000Z","method":"POST","path":"/v1/items","protocol":"HTTP/2.0","status":204,"agent":"curl/8.4 \"x\""}"#
                ))
        // A TLS handshake on a plain port: nginx writes its bytes as \xHH, which stays as written.
        let handshake = #"10.0.0.7 - - [30/Nov/2026:12:00:00 +0000] "\x16\x03\x01" 400 157"#
        #expect(try Self.evaluate("parse_common_log(.m)", handshake)["request"] == #"\x16\x03\x01"#)
        #expect(throws: EvaluationError.self) {
            try Self.evaluate("parse_common_log(.m)", "127.0.0.1 - - [bad] \"GET /\" 200 1")
        }
        #expect(throws: EvaluationError.self) { try Self.evaluate("parse_combined_log(.m)", common) }
    }

    // MARK: - key=value, CSV, JSON, regex

    @Test func logfmtAndKeyValue() throws {
        #expect(
            try Self.evaluate("parse_logfmt(.m)", #"a=1 b="two words""#) == Self.object(#"{"a":"1","b":"two words"}"#))
        #expect(
            try Self.evaluate("parse_logfmt(.m)", #"level=info  msg="stopping \"fetcher\"" debug path=/x"#)
                == Self.object(#"{"level":"info","msg":"stopping \"fetcher\"","debug":true,"path":"/x"}"#))
        #expect(
            try Self.evaluate("parse_logfmt(.m)", #"err="line\nbreak\ttab" path="C:\x""#)
                == Self.object(#"{"err":"line\nbreak\ttab","path":"C:\\x"}"#))
        #expect(throws: EvaluationError.self) { try Self.evaluate("parse_logfmt(.m)", #"a="open"#) }
        #expect(
            try Self.evaluate(#"parse_key_value(.m, ",", ":")"#, "a: 1, b:two ,c")
                == Self.object(#"{"a":"1","b":"two","c":true}"#))
        #expect(try Self.evaluate("parse_logfmt(.m)", "") == Self.object("{}"))
        // Past 16 keys (found through a dictionary from there) a repeated key still keeps its place and takes the
        // last value.
        let many = (0..<40).map { "k\($0)=\($0)" }.joined(separator: " ") + " k3=again"
        guard case .object(let parsed) = try Self.evaluate("parse_logfmt(.m)", many) else {
            Issue.record("not an object")
            return
        }
        #expect(parsed.fields.map(\.key) == (0..<40).map { "k\($0)" })
        #expect(parsed["k3"] == "again" && parsed["k39"] == "39")
    }

    @Test func csvFollowsRFC4180() throws {
        #expect(
            try Self.evaluate("parse_csv(.m)", #"a,"b,c","d ""e""",,"#) == Self.object(#"["a","b,c","d \"e\"","",""]"#))
        #expect(try Self.evaluate(#"parse_csv(.m, ";")"#, "x;\"multi\nline\"") == Self.object(#"["x","multi\nline"]"#))
        #expect(try Self.evaluate("parse_csv(.m)", "") == Self.object(#"[""]"#))
        for broken in [#""open"#, #"a"b,c"#, #""x"y,z"#] {
            #expect(throws: EvaluationError.self, "\(broken)") { try Self.evaluate("parse_csv(.m)", broken) }
        }
    }

    @Test func jsonInAString() throws {
        #expect(try Self.evaluate("parse_json(.m)", #"{"x":[1,2.5,"y"]}"#) == Self.object(#"{"x":[1,2.5,"y"]}"#))
        #expect(throws: EvaluationError.self) { try Self.evaluate("parse_json(.m)", "[1") }
    }

    @Test func regexCapturesNamedGroups() throws {
        let pattern = #"parse_regex(.m, "(?<level>[A-Z]+) service=(?<service>\\S+)(?: req=(?<req>\\d+))?")"#
        #expect(
            try Self.evaluate(pattern, "12:00 ERROR service=api-3 took=87ms")
                == Self.object(#"{"level":"ERROR","service":"api-3","req":null}"#))
        #expect(throws: EvaluationError("'parse_regex' found no match for its pattern")) {
            try Self.evaluate(pattern, "nothing here")
        }
        #expect(throws: ExpressionError.self) { try Expression(#"parse_regex(.m, "[a-z]+")"#) }
    }

    // MARK: - Times

    static let times: [(String, String, Int64?)] = [
        ("10/Oct/2000:13:55:36 -0700", "%d/%b/%Y:%H:%M:%S %z", 971_211_336_000),
        ("2026-11-30 12:00:01.123", "%F %T.%f", 1_796_040_001_123),
        ("2026-11-30T12:00:01.123456+00:00", "%Y-%m-%dT%H:%M:%S.%f%z", 1_796_040_001_123),
        ("Mon, 30 Nov 2026 12:00:00 GMT", "%a, %d %b %Y %T %Z", 1_796_040_000_000),
        ("30 november 2026 12:00", "%d %B %Y %R", 1_796_040_000_000),
        ("1796040000", "%s", 1_796_040_000_000),
        ("03:04 PM", "%I:%M %p", 54_240_000),
        ("12:04 am", "%I:%M %p", 240_000),
        ("11/30/26", "%D", 1_795_996_800_000),
        ("2026 334", "%Y %j", 1_795_996_800_000),
        ("Nov  3 2026", "%b %e %Y", 1_793_664_000_000),
        ("31/Foo/2000:13:55:36 -0700", "%d/%b/%Y:%H:%M:%S %z", nil),
        ("2026-11-30 trailing", "%F", nil),
        ("2026-13-01", "%F", nil),
        ("2026-02-29", "%F", nil),
        ("2024-02-29", "%F", 1_709_164_800_000),
        ("31/Apr/2026:00:00:00 +0000", "%d/%b/%Y:%H:%M:%S %z", nil),
        ("2026 366", "%Y %j", nil),
        ("2024 366", "%Y %j", 1_735_603_200_000),
    ]

    @Test(arguments: times.indices)
    func parseTimeWithAFormat(_ index: Int) throws {
        let (text, format, expected) = Self.times[index]
        let expression = try Expression("parse_time(.m, \"\(format)\")")
        if let expected {
            #expect(try expression.evaluate(["m": .string(text)]) == .int(expected), "\(text) as \(format)")
        } else {
            #expect(throws: EvaluationError.self, "\(text) as \(format)") {
                try expression.evaluate(["m": .string(text)])
            }
        }
    }

    @Test func aTimeFormatMistakeIsAConfigError() throws {
        #expect(throws: ExpressionError("the time format has an unknown directive '%Q'", at: 15)) {
            try Expression(#"parse_time(.m, "%Y %Q")"#)
        }
        #expect(throws: ExpressionError.self) { try Expression(#"parse_time(.m, .format)"#) }
        #expect(try TimeFormat("%d/%b/%Y:%H:%M:%S %z") == TimeFormat.accessLog)
    }
}
