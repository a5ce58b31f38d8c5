import SluiceCore
import Testing

struct DedupeTransformTests {
    static func reading(_ device: Int, _ seq: Int) -> JSONValue {
        ["device": .string("d\(device)"), "seq": .int(Int64(seq))]
    }

    /// Seeded data with a known number of repeats: every repeat within the TTL is discarded, exactly.
    @Test(arguments: [false, true]) func repeatsWithinTheTTLAreDiscardedExactly(asText: Bool) throws {
        var dedupe = try TransformHarness.make(
            "dedupe", "{fields: [.device, .seq], cache: {max_keys: 1000, ttl_secs: 10}}")
        // 10 devices x 50 readings, each sent 1 to 3 times in a row, in batches of 37.
        var events: [JSONValue] = []
        var expectedDuplicates = 0
        for seq in 0..<50 {
            for device in 0..<10 {
                let copies = 1 + (seq + device) % 3
                expectedDuplicates += copies - 1
                events += Array(repeating: Self.reading(device, seq), count: copies)
            }
        }
        var kept: [JSONValue] = []
        var duplicates = 0
        for (index, batch) in stride(from: 0, to: events.count, by: 37).enumerated() {
            let (out, pass) = TransformHarness.process(
                &dedupe, Array(events[batch..<min(batch + 37, events.count)]), at: 1_000 + Int64(index), asText: asText)
            kept += out
            duplicates += pass.discards[.duplicate]
        }
        #expect(kept.count == 500)
        #expect(Set(kept.map { JSONWriter.string($0) }).count == 500)
        #expect(duplicates == expectedDuplicates)
        #expect(dedupe.state == TransformState(name: "state_keys", size: 500, evictedTotal: 0))
    }

    @Test(arguments: [false, true]) func aKeyIsForgottenAfterItsTTLAndAtTheLimit(asText: Bool) throws {
        var dedupe = try TransformHarness.make("dedupe", "{fields: [.device], cache: {max_keys: 2, ttl_secs: 1}}")
        let a: JSONValue = ["device": "a"]
        let b: JSONValue = ["device": "b"]
        let c: JSONValue = ["device": "c"]
        #expect(TransformHarness.process(&dedupe, [a, a, b], at: 0, asText: asText).0 == [a, b])
        // Seen again at 900 ms: still a duplicate, and its TTL restarts.
        #expect(TransformHarness.process(&dedupe, [a], at: 900, asText: asText).1.discards[.duplicate] == 1)
        #expect(TransformHarness.process(&dedupe, [a], at: 1_800, asText: asText).0 == [])
        // 1 s after it was last seen, `a` passes again; `b` (last seen at 0) has expired too.
        #expect(TransformHarness.process(&dedupe, [a, b], at: 2_800, asText: asText).0 == [a, b])
        // A third key over max_keys 2 forgets the least recently seen (`a`), which then passes again.
        #expect(TransformHarness.process(&dedupe, [c, a], at: 2_900, asText: asText).0 == [c, a])
        #expect(dedupe.state?.evictedTotal == 2)
        #expect(dedupe.state?.size == 2)
    }
}
