import SluiceTesting
import Testing

@testable import SluiceCore

/// A field located where it was in the last event must read exactly what a full lookup reads, whatever the next
/// event looks like: the field elsewhere, missing, inside a string, in text that is not flat, or a parsed event.
struct FieldLocatorTests {
    static func event(_ text: String) -> Event {
        var scanner = CanonicalJSONScanner()
        let bytes = Array(text.utf8)
        let canonical = bytes.withUnsafeBufferPointer { scanner.isCanonical($0) }
        return canonical
            ? Event(canonicalJSON: bytes, topLevelKeys: scanner.topLevelKeys, isFlat: scanner.isFlat)
            : Event(try! JSONReader.parse(bytes))
    }

    @Test func aRememberedOffsetNeverReadsTheWrongField() {
        let texts = [
            #"{"device":"a","temp":1.5}"#, #"{"device":"bb","temp":2}"#, #"{"temp":3.25,"device":"c"}"#,
            #"{"x":"\"temp\":9","temp":4}"#, #"{"device":"d"}"#, #"{"tempo":5,"temp":6}"#, #"{"temp":{"a":1}}"#,
            #"{ "temp" : 7 }"#, #"{"device":"e","temp":"hot"}"#, #"{"device":"a","temp":1.5}"#,
        ]
        var temp = FieldLocator("temp")
        var device = FieldLocator("device")
        for text in texts + texts.reversed() {
            let event = Self.event(text)
            #expect(event.lookup(&temp) == event.lookup([.key("temp")]), "\(text)")
            #expect(event.lookup(&device) == event.lookup([.key("device")]), "\(text)")
        }
    }

    /// A key is compared where it is expected in one or two eight-byte loads: keys of every length from 1 to 24
    /// bytes (under, at and over eight and sixteen with their quotes and colon), first, in the middle and last in
    /// flat text (where fewer than eight bytes follow), beside keys that differ from them in one byte at any place,
    /// one byte longer or shorter, read what a full lookup reads.
    @Test func keysOfEveryLengthAreReadWhereverTheyStand() {
        for length in 1...24 {
            let key = String(decoding: (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }, as: UTF8.self)
            var decoys = [key + "x", "x" + key, String(key.dropLast())].filter { !$0.isEmpty }
            for position in 0..<length {
                var bytes = Array(key.utf8)
                bytes[position] = UInt8(ascii: "Z")
                decoys.append(String(decoding: bytes, as: UTF8.self))
            }
            var locator = FieldLocator(key)
            for decoy in decoys {
                for text in [
                    #"{"\#(key)":1,"\#(decoy)":2}"#, #"{"\#(decoy)":2,"\#(key)":3}"#, #"{"\#(decoy)":2}"#,
                    #"{"n":0,"\#(key)":4.5,"m":5}"#, #"{"\#(key)":6}"#, #"{"\#(decoy)":7,"\#(key)":true}"#,
                ] {
                    let event = Self.event(text)
                    let expected = event.lookup([.key(key)])
                    #expect(event.lookup(&locator) == expected, "\(key) in \(text)")
                    #expect(event.scalar(&locator) == expected.flatMap(Scalar.init), "\(key) in \(text)")
                }
            }
        }
    }

    @Test func timesInTheSameMinuteAndAcrossMinutesReadAlike() {
        var locator = FieldLocator("ts")
        var generator = SplitMix64(seed: 4)
        for _ in 0..<5_000 {
            let millis = 1_796_040_000_000 + Int64(generator.next() % 7_200_000)
            let forms = [
                RFC3339.format(epochMillis: millis), RFC3339.format(epochMillis: millis).replacing(".", with: ",x"),
                "2026-11-30T12:00:00+01:00", String(millis),
            ]
            for form in forms {
                let event = Self.event(
                    form.hasPrefix("2") && form.count > 13 ? #"{"ts":"\#(form)"}"# : #"{"ts":\#(form)}"#)
                let expected: Int64? =
                    if case .string(let text)? = event.lookup([.key("ts")]) { RFC3339.parse(text) } else {
                        event.lookup([.key("ts")])?.intValue
                    }
                #expect(event.epochMillis(&locator) == expected, "\(form)")
            }
        }
    }
}
