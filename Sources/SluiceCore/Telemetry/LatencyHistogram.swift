/// End-to-end latencies in logarithmic buckets (8 per power of two, so a quantile is within about 9 %), cheap
/// enough to record every event of every batch.
public struct LatencyHistogram: Sendable, Equatable {
    private static let subBuckets = 8
    /// 1 µs to about 2^40 µs is more than enough; everything above lands in the last bucket.
    private static let bucketCount = 40 * subBuckets
    private var buckets = [UInt64](repeating: 0, count: bucketCount)
    /// The number of latencies recorded.
    public private(set) var count: UInt64 = 0

    /// An empty histogram.
    public init() {}

    /// Records one latency.
    public mutating func record(nanos: UInt64) {
        buckets[Self.bucket(for: nanos)] &+= 1
        count &+= 1
    }

    /// Adds every recording of `other`.
    public mutating func add(_ other: LatencyHistogram) {
        for index in buckets.indices { buckets[index] &+= other.buckets[index] }
        count &+= other.count
    }

    /// The latency below which `fraction` of the recordings fall, in milliseconds; `nil` when empty.
    public func quantileMillis(_ fraction: Double) -> Double? {
        guard count > 0 else { return nil }
        let target = UInt64((Double(count) * fraction).rounded(.up))
        var seen: UInt64 = 0
        for (index, bucketCount) in buckets.enumerated() {
            seen += bucketCount
            if seen >= max(1, target) { return Self.upperBoundMicros(of: index) / 1000 }
        }
        return Self.upperBoundMicros(of: buckets.count - 1) / 1000
    }

    private static func bucket(for nanos: UInt64) -> Int {
        let micros = nanos / 1000
        guard micros >= 1 else { return 0 }
        let power = 63 - micros.leadingZeroBitCount
        // The bits just below the leading one pick the sub-bucket.
        let fraction = power >= 3 ? Int((micros >> UInt64(power - 3)) & 7) : Int((micros << UInt64(3 - power)) & 7)
        return min(bucketCount - 1, power * subBuckets + fraction)
    }

    private static func upperBoundMicros(of index: Int) -> Double {
        let power = index / subBuckets
        let fraction = index % subBuckets
        return Double(1 << power) * (1 + Double(fraction + 1) / Double(subBuckets))
    }
}
