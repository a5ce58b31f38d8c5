import SluiceTesting
import Testing

@testable import SluiceTransforms

/// The percentile sketch against sorted values: exact while it holds at most ``DDSketch/exactValues`` values, within
/// its relative accuracy past them, and a merge of two sketches answers as one sketch of all their values.
struct DDSketchTests {
    static let quantiles = [0.0, 0.1, 0.5, 0.9, 0.95, 0.99, 1.0]

    /// The value at quantile `q` of `values`, as the sketch defines it: rank ⌊q (n − 1)⌋ in sorted order.
    static func truth(_ values: [Double], _ q: Double) -> Double {
        let sorted = values.sorted()
        return sorted[Int((q * Double(sorted.count - 1)).rounded(.down))]
    }

    /// Magnitudes over six orders of ten, a tenth of them negative and a tenth zero.
    static func value(_ generator: inout SplitMix64) -> Double {
        let magnitude = pow(10, Double(generator.next() % 6_000) / 1_000 - 2)
        switch generator.next() % 10 {
        case 0: return 0
        case 1: return -magnitude
        default: return magnitude
        }
    }

    static func expectAnswers(_ sketch: DDSketch, _ values: [Double], sourceLocation: SourceLocation = #_sourceLocation)
    {
        for q in quantiles {
            let truth = Self.truth(values, q)
            guard let answer = sketch.quantile(q) else {
                Issue.record("no answer for \(values.count) values", sourceLocation: sourceLocation)
                return
            }
            if values.count <= DDSketch.exactValues {
                #expect(answer == truth, "q \(q) of \(values.count) values", sourceLocation: sourceLocation)
            } else {
                #expect(
                    abs(answer - truth) <= 0.01 * abs(truth), "q \(q) of \(values.count) values: \(answer), not \(truth)",
                    sourceLocation: sourceLocation)
            }
        }
    }

    @Test func fewValuesAreExactAndManyWithinTheAccuracy() {
        var generator = SplitMix64(seed: 41)
        for count in 1...80 {
            var sketch = DDSketch()
            var values: [Double] = []
            for _ in 0..<count {
                values.append(Self.value(&generator))
                sketch.add(values[values.count - 1])
            }
            Self.expectAnswers(sketch, values)
        }
    }

    /// Sessions that an event joins merge their sketches: below the limit together, across it, one side already in
    /// buckets, and both.
    @Test func aMergeAnswersAsOneSketchOfAllTheValues() {
        var generator = SplitMix64(seed: 43)
        for (left, right) in [(3, 5), (20, 12), (20, 13), (40, 3), (3, 40), (50, 60), (0, 7), (7, 0)] {
            var sketches = (DDSketch(), DDSketch())
            var values: [Double] = []
            for index in 0..<(left + right) {
                let value = Self.value(&generator)
                values.append(value)
                if index < left { sketches.0.add(value) } else { sketches.1.add(value) }
            }
            sketches.0.merge(sketches.1)
            Self.expectAnswers(sketches.0, values)
        }
    }

    /// A window's state is reused: after a reset the sketch answers for the new values only, whichever form it had.
    @Test func aResetSketchAnswersForItsNewValuesOnly() {
        var generator = SplitMix64(seed: 47)
        var sketch = DDSketch()
        for count in [50, 5, 40, 1] {
            sketch.reset()
            let values = (0..<count).map { _ in Self.value(&generator) }
            for value in values { sketch.add(value) }
            Self.expectAnswers(sketch, values)
        }
    }
}

#if canImport(Glibc)
    import Glibc
#endif
