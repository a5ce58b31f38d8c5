import SluiceTesting
import Testing

@testable import SluiceTransforms

/// A merge of two distinct counters, each read where it lies, answers as one counter of all their values: exactly
/// while the union stays within ``DistinctCounter/exactLimit``, and past it whichever of the two had moved to
/// registers (the registers keep each bucket's largest rank, so the order of adding does not matter).
struct DistinctCounterTests {
    /// Counts of values in the two counters, overlapping by half of the smaller: both exact, an exact union past
    /// the limit, exact into registers, registers into exact, and both in registers.
    @Test(arguments: [(300, 400), (700, 800), (200, 3_000), (3_000, 200), (5_000, 4_000)])
    func aMergeAnswersAsOneCounterOfAllTheValues(counts: (Int, Int)) {
        var generator = SplitMix64(seed: UInt64(counts.0 * 31 + counts.1))
        let first = (0..<counts.0).map { _ in generator.next() }
        let overlap = min(counts.0, counts.1) / 2
        let second = Array(first.prefix(overlap)) + (overlap..<counts.1).map { _ in generator.next() }
        var merged = DistinctCounter()
        var other = DistinctCounter()
        var whole = DistinctCounter()
        for hash in first {
            merged.add(hash: hash)
            whole.add(hash: hash)
        }
        for hash in second {
            other.add(hash: hash)
            whole.add(hash: hash)
        }
        let otherBefore = other.estimate
        withUnsafePointer(to: other) { other in
            withUnsafeMutablePointer(to: &merged) { DistinctCounter.merge(other, into: $0) }
        }
        let union = counts.0 + counts.1 - overlap
        #expect(merged.estimate == whole.estimate, "\(counts)")
        #expect(other.estimate == otherBefore, "the counter merged from is left as it was")
        if union <= DistinctCounter.exactLimit {
            #expect(merged.estimate == union, "\(counts)")
        } else {
            #expect(abs(Double(merged.estimate - union)) <= 0.03 * Double(union), "\(merged.estimate) of \(union)")
        }
    }
}
