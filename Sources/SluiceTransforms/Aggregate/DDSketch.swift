#if canImport(Glibc)
    internal import Glibc
#endif

/// A quantile sketch with relative accuracy (DDSketch: Masson, Rim and Lee, VLDB 2019): a value `x > 0` is counted
/// in bucket `ceil(log_γ x)` with `γ = (1 + α) / (1 − α)`, and a quantile is answered with its bucket's centre,
/// which is within `α` (1 %) of the true value at that rank. Negative values have buckets of their own, zeros a
/// counter. Memory is bounded: past ``maxBuckets`` buckets per sign the lowest-magnitude ones are merged (those
/// quantiles lose accuracy first, the high ones that latency and temperature percentiles ask for do not).
/// Sketches merge by adding counts, so session windows can join.
///
/// Until it has more than ``exactValues`` values a sketch keeps the values themselves, and answers exactly: a window
/// of a few readings (a device reporting every second in a 10 s window) gets its true percentiles, and folding one
/// costs an append rather than a logarithm and a bucket, whose array grows at its front whenever a new smallest
/// value comes. The values move into buckets when one more arrives.
struct DDSketch: Sendable {
    /// The relative accuracy.
    static let alpha = 0.01
    static let gamma = (1 + alpha) / (1 - alpha)
    static let logGamma = log(gamma)
    /// With α = 1 %, 2,048 buckets span magnitudes over 17 orders of ten.
    static let maxBuckets = 2048

    /// The most values kept as they are.
    static let exactValues = 32

    /// The values, while there are at most ``exactValues`` of them (its storage is kept for the next window).
    private var exact: [Double] = []
    private var positive = Buckets()
    private var negative = Buckets()
    private var zeros = 0
    private(set) var count = 0
    private var minimum = Double.infinity
    private var maximum = -Double.infinity

    /// Adds one finite value.
    mutating func add(_ value: Double) {
        count += 1
        minimum = Swift.min(minimum, value)
        maximum = Swift.max(maximum, value)
        if count <= Self.exactValues {
            exact.append(value)
            return
        }
        if count == Self.exactValues + 1 { moveExactIntoBuckets() }
        addToBuckets(value)
    }

    /// Counts `exact`'s values in the buckets, and keeps no values from then on.
    private mutating func moveExactIntoBuckets() {
        for value in exact { addToBuckets(value) }
        exact.removeAll(keepingCapacity: true)
    }

    private mutating func addToBuckets(_ value: Double) {
        if value > 0 {
            positive.add(Self.index(value))
        } else if value < 0 {
            negative.add(Self.index(-value))
        } else {
            zeros += 1
        }
    }

    /// Empties it, keeping its buckets' storage for the next window.
    mutating func reset() {
        exact.removeAll(keepingCapacity: true)
        positive.reset()
        negative.reset()
        zeros = 0
        count = 0
        minimum = .infinity
        maximum = -.infinity
    }

    /// Adds every value of `other`.
    mutating func merge(_ other: DDSketch) {
        withUnsafePointer(to: other) { other in Self.merge(other, into: &self) }
    }

    /// Adds every value of the sketch at `other` to the one at `sketch` (another), reading `other` where it lies:
    /// a hopping window merges its panes' sketches, and a copy of one retained each of its three arrays (a cache
    /// miss apiece, most of the time it took). Only the parts `other` uses are read, for the same reason: a sketch
    /// with few values has no buckets, one with many no values kept.
    static func merge(_ other: UnsafePointer<DDSketch>, into sketch: UnsafeMutablePointer<DDSketch>) {
        precondition(UnsafePointer(sketch) != other, "A sketch cannot be merged into itself.")
        let wasExact = sketch.pointee.count <= exactValues
        let otherCount = other.pointee.count
        sketch.pointee.count += otherCount
        sketch.pointee.minimum = Swift.min(sketch.pointee.minimum, other.pointee.minimum)
        sketch.pointee.maximum = Swift.max(sketch.pointee.maximum, other.pointee.maximum)
        if otherCount <= exactValues {
            other.pointee.exact.withUnsafeBufferPointer { values in
                if sketch.pointee.count <= exactValues {
                    sketch.pointee.exact.append(contentsOf: values)
                    return
                }
                if wasExact { sketch.pointee.moveExactIntoBuckets() }
                for value in values { sketch.pointee.addToBuckets(value) }
            }
            return
        }
        if wasExact { sketch.pointee.moveExactIntoBuckets() }
        sketch.pointee.zeros += other.pointee.zeros
        sketch.pointee.positive.merge(other.pointee.positive)
        sketch.pointee.negative.merge(other.pointee.negative)
    }

    /// The value at quantile `q` (0...1): the item of rank `⌊q (n − 1)⌋` in sorted order, within α of it (exact at
    /// the ends); `nil` when empty.
    func quantile(_ q: Double) -> Double? {
        guard count > 0 else { return nil }
        let rank = Int((q * Double(count - 1)).rounded(.down))
        if count <= Self.exactValues {
            // Sorted on the stack: a window's few values, once, allocate nothing.
            return withUnsafeTemporaryAllocation(of: Double.self, capacity: exact.count) { buffer in
                var sorted = buffer
                _ = sorted.initialize(from: exact)
                sorted.sort()
                return sorted[rank]
            }
        }
        if rank == 0 { return minimum }
        if rank == count - 1 { return maximum }
        var seen = 0
        // Negative values, largest magnitude (smallest value) first.
        if let index = negative.index(atRank: rank, descending: true, seen: &seen) {
            return Swift.max(minimum, -Self.value(index))
        }
        seen += zeros
        if rank < seen { return 0 }
        if let index = positive.index(atRank: rank, descending: false, seen: &seen) {
            return Swift.min(maximum, Self.value(index))
        }
        return maximum
    }

    private static func index(_ magnitude: Double) -> Int {
        // `rounded(.up)` is a call to `ceil` on this target; for an index (a few thousand at most either way) the
        // conversion, which truncates towards zero, and a comparison give the same.
        let position = log(magnitude) / logGamma
        let truncated = Int(position)
        return Double(truncated) < position ? truncated + 1 : truncated
    }

    /// The centre of bucket `index`: every value in it is within α of this.
    private static func value(_ index: Int) -> Double {
        2 * pow(gamma, Double(index)) / (gamma + 1)
    }

    /// Counts of consecutive bucket indices from `offset`, collapsing the lowest when there are too many.
    private struct Buckets: Sendable {
        var offset = 0
        var counts: [Int] = []
        var total = 0

        mutating func reset() {
            counts.removeAll(keepingCapacity: true)
            total = 0
        }

        mutating func add(_ index: Int, count: Int = 1) {
            total += count
            if counts.isEmpty {
                offset = index
                counts.append(count)
                return
            }
            if index < offset {
                let grow = offset - index
                if counts.count + grow > DDSketch.maxBuckets {
                    // Below what fits: counted in the lowest bucket kept.
                    let lowest = Swift.max(index, offset + counts.count - DDSketch.maxBuckets)
                    if lowest < offset {
                        counts.insert(contentsOf: repeatElement(0, count: offset - lowest), at: 0)
                        offset = lowest
                    }
                    counts[0] += count
                    return
                }
                counts.insert(contentsOf: repeatElement(0, count: grow), at: 0)
                offset = index
            } else if index >= offset + counts.count {
                counts.append(contentsOf: repeatElement(0, count: index - offset - counts.count + 1))
                if counts.count > DDSketch.maxBuckets {
                    // Too wide: fold the lowest buckets into the lowest one kept.
                    let excess = counts.count - DDSketch.maxBuckets
                    let folded = counts[0..<excess].reduce(0, +)
                    counts.removeFirst(excess)
                    counts[0] += folded
                    offset += excess
                }
            }
            counts[index - offset] += count
        }

        mutating func merge(_ other: Buckets) {
            guard other.total > 0 else { return }
            other.counts.withUnsafeBufferPointer { counts in
                for (position, count) in counts.enumerated() where count > 0 {
                    add(other.offset + position, count: count)
                }
            }
        }

        /// The index of the bucket holding rank `rank`, counting `seen` items before these buckets.
        func index(atRank rank: Int, descending: Bool, seen: inout Int) -> Int? {
            guard total > 0 else { return nil }
            guard rank < seen + total else {
                seen += total
                return nil
            }
            let positions = descending ? Array(counts.indices.reversed()) : Array(counts.indices)
            for position in positions {
                seen += counts[position]
                if rank < seen { return offset + position }
            }
            return nil
        }
    }
}
