/// A 64-bit hash of bytes that is the same in every run and on every machine (Swift's `Hasher` is seeded per
/// process): for decisions that must repeat, such as which keys `sample` keeps, and for sketches.
public enum StableHash {
    /// The hash of `bytes`: eight bytes at a time, each word mixed with the murmur3 finalizer.
    public static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> UInt64 {
        var state = seed ^ (UInt64(truncatingIfNeeded: bytes.count) &* 0xC2B2_AE3D_27D4_EB4F)
        var offset = 0
        while bytes.count - offset >= 8 {
            state = mix(state ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count {
            tail |= UInt64(bytes[offset]) << shift
            shift += 8
            offset += 1
        }
        return mix(state ^ tail ^ 0xFF51_AFD7_ED55_8CCD)
    }

    /// The hash of a JSON value: of the bytes Sluice writes for it, so that equal values hash alike.
    public static func hash(_ value: JSONValue) -> UInt64 {
        var bytes: [UInt8] = []
        JSONWriter.write(value, to: &bytes)
        return bytes.withUnsafeBytes { hash($0) }
    }

    @inline(__always)
    private static func mix(_ value: UInt64) -> UInt64 {
        var x = value
        x ^= x >> 33
        x = x &* 0xFF51_AFD7_ED55_8CCD
        x ^= x >> 33
        x = x &* 0xC4CE_B9FE_1A85_EC53
        x ^= x >> 33
        return x
    }
}
