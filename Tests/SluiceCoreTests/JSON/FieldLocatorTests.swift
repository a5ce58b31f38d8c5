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
