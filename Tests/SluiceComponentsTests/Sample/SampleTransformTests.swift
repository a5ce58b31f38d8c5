import SluiceCore
import Testing

struct SampleTransformTests {
    /// A keyed sample decides by each event's key alone, so it may run as several instances in a source's sending;
    /// keeping the first of every `rate` counts events, so it may not. (Filter and map are stateless too; the
    /// stateful types are not.)
    @Test func onlyAKeyedSampleIsStatelessAmongTheStatefulTypes() throws {
        #expect(try TransformHarness.config("sample", "{rate: 4, key: .device}").isStateless)
        #expect(try !TransformHarness.config("sample", "{rate: 4}").isStateless)
        #expect(try TransformHarness.config("filter", "{condition: .a > 1}").isStateless)
        #expect(try TransformHarness.config("map", "{set: {b: .a}}").isStateless)
        #expect(try !TransformHarness.config("throttle", "{max_events: 1, window_secs: 1}").isStateless)
        #expect(try !TransformHarness.config("dedupe", "{fields: [.a]}").isStateless)
        #expect(try !TransformHarness.config("route", "{routes: {a: .a > 1}}").isStateless)
    }

    @Test func oneInRateIsKeptByCount() throws {
        var sample = try TransformHarness.make("sample", "{rate: 10}")
        var kept: [JSONValue] = []
        var sampled = 0
        for batch in stride(from: 0, to: 1003, by: 100) {
            let (out, pass) = TransformHarness.process(
                &sample, (batch..<min(batch + 100, 1003)).map { ["n": .int(Int64($0))] }, at: 0)
            kept += out
            sampled += pass.discards[.sampled]
        }
        #expect(kept.map { $0["n"] } == stride(from: 0, to: 1003, by: 10).map { JSONValue.int(Int64($0)) })
        #expect(sampled == 1003 - 101)
    }

    /// With a key, a key is kept or dropped whole, the same keys in every run, and about one key in `rate`.
    @Test func aKeyIsKeptOrDroppedWhole() throws {
        var sample = try TransformHarness.make("sample", "{rate: 4, key: .device}")
        let events: [JSONValue] = (0..<40_000).map { ["device": .string("d\($0 % 2000)"), "n": .int(Int64($0))] }
        let (kept, pass) = TransformHarness.process(&sample, events, at: 0)
        let keptDevices = Set(kept.compactMap { $0["device"]?.stringValue })
        #expect(kept.count == keptDevices.count * 20, "every reading of a kept device is kept")
        #expect(pass.discards[.sampled] == 40_000 - kept.count)
        #expect(keptDevices.count > 400 && keptDevices.count < 600, "\(keptDevices.count) of 2000 devices")
        var again = try TransformHarness.make("sample", "{rate: 4, key: .device}")
        #expect(TransformHarness.process(&again, events, at: 0).0 == kept)
        // Events that arrive as text are keyed by the same bytes, so the same devices are kept.
        var asText = try TransformHarness.make("sample", "{rate: 4, key: .device}")
        #expect(TransformHarness.process(&asText, events, at: 0, asText: true).0 == kept)
    }
}
