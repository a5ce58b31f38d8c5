/// xoshiro256** seeded through SplitMix64: fast, small, and the same sequence for the same seed on every machine.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: (UInt64, UInt64, UInt64, UInt64)

    public init(seed: UInt64) {
        var mix = seed
        func next() -> UInt64 {
            mix &+= 0x9E37_79B9_7F4A_7C15
            var z = mix
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        state = (next(), next(), next(), next())
    }

    public mutating func next() -> UInt64 {
        let result = rotate(state.1 &* 5, 7) &* 9
        let t = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= t
        state.3 = rotate(state.3, 45)
        return result
    }

    private func rotate(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }

    /// A uniform double in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// A normally distributed double: the standard normal quantile at a uniform point, interpolated in a table of
    /// 4,097 quantiles (so within about 3.7 deviations of the mean), ten times cheaper than Box-Muller's log and cos.
    public mutating func gaussian(_ mean: Double = 0, _ deviation: Double = 1) -> Double {
        let bits = next()
        let index = Int(bits >> 52)
        let fraction = Double(bits & 0xF_FFFF_FFFF_FFFF) * 0x1.0p-52
        let low = Self.quantiles[index]
        return mean + deviation * (low + (Self.quantiles[index + 1] - low) * fraction)
    }

    private static let quantiles: [Double] = (0...4096).map { inverseNormal((Double($0) + 0.5) / 4097) }

    /// The standard normal quantile of `p` in (0, 1), by Acklam's rational approximation (relative error < 1.2e-9).
    static func inverseNormal(_ p: Double) -> Double {
        let a = [
            -3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
            -3.066479806614716e+01, 2.506628277459239e+00,
        ]
        let b = [
            -5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
            -1.328068155288572e+01,
        ]
        let c = [
            -7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
            4.374664141464968e+00, 2.938163982698783e+00,
        ]
        let d = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00]
        func tail(_ q: Double) -> Double {
            (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
                / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
        }
        let low = 0.02425
        if p < low { return tail((-2 * log(p)).squareRoot()) }
        if p > 1 - low { return -tail((-2 * log(1 - p)).squareRoot()) }
        let q = p - 0.5
        let r = q * q
        return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
            / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { p > 0 && unit() < p }
}

#if canImport(Glibc)
    internal import Glibc
#endif
