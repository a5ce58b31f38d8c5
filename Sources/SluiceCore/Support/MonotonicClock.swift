#if canImport(Glibc)
    internal import Glibc
#endif

/// Reads `CLOCK_MONOTONIC` in nanoseconds: cheap enough to call once per batch, never goes backwards.
public enum MonotonicClock {
    /// Nanoseconds since an arbitrary fixed point (boot).
    public static func nanos() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }
}
