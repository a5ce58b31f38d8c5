import Foundation
import SluiceCore
import Testing

/// `dedupe` through the real binary against an independent LRU in Python (`Peers/dedupe_reference.py`): seeded
/// streams of keys of one to three fields (integers, strings, booleans, null and missing fields), with caches from
/// one key, where nearly every new key forgets another, to 20,000, past the size at which the transform reads its
/// table ahead. What it keeps, in order, and its counts are what the LRU keeps.
@Suite(.serialized)
struct DedupeEndToEndTests {
    @Test(arguments: 0..<16) func dedupeKeepsWhatAnLRUOfItsKeysKeeps(seed: Int) throws {
        let fields = 1 + seed % 3
        let maxKeys = [1, 2, 5, 50, 1000, 20_000, 20_000, 20_000][seed % 8]
        // Few distinct keys (many duplicates), or tens of thousands (most keys new, the cache always full).
        let values = seed % 2 == 0 ? 7 : 40_000
        let shape = ["--fields", String(fields)]
        let input = try ReferencePeer.run(
            "dedupe_reference.py",
            ["generate", "--seed", String(seed), "--count", "30000", "--values", String(values)] + shape, input: "")
        let expected = try ReferencePeer.run(
            "dedupe_reference.py", ["compute", "--max-keys", String(maxKeys)] + shape, input: input
        )
        .split(separator: "\n").map { Int($0)! }
        let keyFields = (0..<fields).map { ".f\($0)" }.joined(separator: ", ")
        let pipeline = try TemporaryPipeline(
            """
            sources:
              in: {type: stdin}
            transforms:
              unique: {type: dedupe, inputs: [in], fields: [\(keyFields)], cache: {max_keys: \(maxKeys)}}
            sinks:
              out: {type: stdout, inputs: [unique]}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let result = try SluiceProcess.run(["run", pipeline.path], stdin: input)
        #expect(result.status == 0, "\(result.errors)")
        let kept = try result.output.split(separator: "\n").map { try JSONReader.parse(String($0)).int("i") ?? -1 }
        #expect(kept.count == expected.count, "kept \(kept.count), the LRU \(expected.count)")
        #expect(
            kept == expected,
            "the first difference at \(kept.indices.first { $0 >= expected.count || kept[$0] != expected[$0] } ?? -1)")
        let unique = try #require(try pipeline.finalComponent("unique"))
        #expect(unique.int("discarded_events_total", "duplicate") == 30_000 - expected.count)
        #expect(unique.balances)
        #expect(unique.int("state", "state_keys") ?? .max <= maxKeys)
    }
}
