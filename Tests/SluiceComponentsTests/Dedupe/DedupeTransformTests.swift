import SluiceCore
import SluiceTesting
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

    /// A key is the same key however its values are read: in place from an event's text (flat, or not flat), or
    /// evaluated from a parsed event or below the top level. The order of the values counts, and a missing value
    /// is null.
    @Test func aKeyIsTheSameKeyHoweverItsValuesAreRead() throws {
        for (fields, place) in [("[.device, .seq]", JSONValue.string("Oslo")), ("[.device, .seq, .place.city]", ["city": "Oslo"])]
        {
            var dedupe = try TransformHarness.make("dedupe", "{fields: \(fields)}")
            let first: JSONValue = ["device": "a", "seq": 1, "place": place]
            let swapped: JSONValue = ["device": 1, "seq": "a", "place": place]
            let noSeq: JSONValue = ["device": "a", "place": place]
            let nullSeq: JSONValue = ["device": "a", "seq": .null, "place": place]
            #expect(TransformHarness.process(&dedupe, [first, swapped, noSeq], at: 0, asText: true).0.count == 3)
            let (kept, pass) = TransformHarness.process(&dedupe, [nullSeq, swapped, first], at: 1, asText: false)
            #expect(kept == [], "\(fields)")
            #expect(pass.discards[.duplicate] == 3)
        }
    }

    /// A key of several values streams them through one hash, each ended by a newline: values that spell the same
    /// bytes together but split differently between the fields (around the eight-byte words the hash reads) are
    /// different keys, read in place or from a parsed event, and each is the same key again the second time.
    @Test(arguments: [false, true]) func valuesSplitDifferentlyAreDifferentKeys(asText: Bool) throws {
        var dedupe = try TransformHarness.make("dedupe", "{fields: [.a, .b]}")
        let letters = Array("abcdefghijklmnopqrstu")
        var events: [JSONValue] = []
        for split in 0...letters.count {
            events.append(["a": .string(String(letters[..<split])), "b": .string(String(letters[split...]))])
        }
        events.append(["a": 1, "b": 23])
        events.append(["a": 12, "b": 3])
        let (kept, pass) = TransformHarness.process(&dedupe, events, at: 0, asText: asText)
        #expect(kept.count == events.count)
        #expect(pass.discards[.duplicate] == 0)
        let (again, repeated) = TransformHarness.process(&dedupe, events, at: 1, asText: !asText)
        #expect(again == [])
        #expect(repeated.discards[.duplicate] == events.count)
    }

    /// Past 16,384 keys the transform reads a batch's table slots ahead (``RecentKeys/warm(_:forgetting:)``): the
    /// events kept must still be exactly those of an LRU cache, here a model kept by last use in a heap, on 60,000
    /// seeded events over 30,000 keys with a limit of 20,000.
    @Test func aLargeCacheKeepsExactlyWhatAnLRUCacheKeeps() throws {
        var dedupe = try TransformHarness.make("dedupe", "{fields: [.device, .seq], cache: {max_keys: 20000}}")
        var random = SplitMix64(seed: 21)
        // The model: each key's last use, and a min-heap of (use, key) whose stale entries are skipped.
        var lastUse: [Int: Int] = [:]
        var heap: [(use: Int, key: Int)] = []
        func push(_ item: (use: Int, key: Int)) {
            heap.append(item)
            var child = heap.count - 1
            while child > 0, heap[(child - 1) / 2].use > heap[child].use {
                heap.swapAt(child, (child - 1) / 2)
                child = (child - 1) / 2
            }
        }
        func popOldest() -> (use: Int, key: Int) {
            let top = heap[0]
            heap.swapAt(0, heap.count - 1)
            heap.removeLast()
            var parent = 0
            while true {
                var smallest = parent
                for child in [2 * parent + 1, 2 * parent + 2]
                where child < heap.count && heap[child].use < heap[smallest].use {
                    smallest = child
                }
                if smallest == parent { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
            return top
        }
        var expected: [JSONValue] = []
        var events: [JSONValue] = []
        for step in 0..<60_000 {
            // Mostly recent keys, so that some repeats are still held and some were forgotten.
            let key = Int(random.next() % 2 == 0 ? random.next() % 30_000 : UInt64(step / 2) % 30_000)
            let event = Self.reading(key % 100, key)
            events.append(event)
            if lastUse[key] == nil {
                expected.append(event)
                if lastUse.count == 20_000 {
                    while true {
                        let oldest = popOldest()
                        if lastUse[oldest.key] == oldest.use {
                            lastUse[oldest.key] = nil
                            break
                        }
                    }
                }
            }
            lastUse[key] = step
            push((step, key))
        }
        var kept: [JSONValue] = []
        for batch in stride(from: 0, to: events.count, by: 1_000) {
            kept += TransformHarness.process(&dedupe, Array(events[batch..<batch + 1_000]), at: 0, asText: true).0
        }
        #expect(kept.count == expected.count)
        #expect(kept == expected)
        #expect(dedupe.state?.size == 20_000)
    }
}
