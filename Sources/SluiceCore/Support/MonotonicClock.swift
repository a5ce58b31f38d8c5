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

/// Reads the wall clock (`CLOCK_REALTIME`) in milliseconds since the Unix epoch, for timestamps in events.
public enum WallClock {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public static func nowMillis() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }
}
