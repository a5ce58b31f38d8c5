/// A 64-bit hash of bytes that is the same in every run and on every machine (Swift's `Hasher` is seeded per
/// process): for decisions that must repeat, such as which keys `sample` keeps, and for sketches.
public enum StableHash {
    /// The hash of `bytes`: eight bytes at a time, each word mixed with the murmur3 finalizer.
    public static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> UInt64 {
        var state = seed ^ lengthWord(bytes)
        let tail = forEachWord(of: bytes) { state = mix(state ^ $0) }
        return mix(state ^ tail ^ 0xFF51_AFD7_ED55_8CCD)
    }

    /// Two hashes of `bytes` in one pass: ``hash(_:seed:)`` with the default seed and with `secondSeed`, for a
    /// 128-bit fingerprint at little more than the cost of one hash.
    public static func pair(_ bytes: UnsafeRawBufferPointer, secondSeed: UInt64) -> (UInt64, UInt64) {
        var first = 0x9E37_79B9_7F4A_7C15 ^ lengthWord(bytes)
        var second = secondSeed ^ lengthWord(bytes)
        let tail = forEachWord(of: bytes) { word in
            first = mix(first ^ word)
            second = mix(second ^ word)
        }
        return (mix(first ^ tail ^ 0xFF51_AFD7_ED55_8CCD), mix(second ^ tail ^ 0xFF51_AFD7_ED55_8CCD))
    }

    /// ``pair(_:secondSeed:)`` of `bytes` followed by the byte `last`, without copying them anywhere: a key read in
    /// place from an event's text and ended by a separator hashes as the same key copied out and ended.
    public static func pair(_ bytes: UnsafeRawBufferPointer, followedBy last: UInt8, secondSeed: UInt64)
        -> (UInt64, UInt64)
    {
        let length = UInt64(truncatingIfNeeded: bytes.count + 1) &* 0xC2B2_AE3D_27D4_EB4F
        var first = 0x9E37_79B9_7F4A_7C15 ^ length
        var second = secondSeed ^ length
        let left = forEachWord(of: bytes) { word in
            first = mix(first ^ word)
            second = mix(second ^ word)
        }
        // What is left of `bytes`, and `last`: one to eight bytes, a whole word only when there are eight.
        let remaining = bytes.count % 8
        var tail = left | UInt64(last) << UInt64(remaining * 8)
        if remaining == 7 {
            first = mix(first ^ tail)
            second = mix(second ^ tail)
            tail = 0
        }
        return (mix(first ^ tail ^ 0xFF51_AFD7_ED55_8CCD), mix(second ^ tail ^ 0xFF51_AFD7_ED55_8CCD))
    }

    @inline(__always)
    private static func lengthWord(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        UInt64(truncatingIfNeeded: bytes.count) &* 0xC2B2_AE3D_27D4_EB4F
    }

    /// Calls `body` with each whole eight-byte word of `bytes`; returns the bytes after them as one word.
    @inline(__always)
    private static func forEachWord(of bytes: UnsafeRawBufferPointer, _ body: (UInt64) -> Void) -> UInt64 {
        var offset = 0
        while bytes.count - offset >= 8 {
            body(bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count {
            tail |= UInt64(bytes[offset]) << shift
            shift += 8
            offset += 1
        }
        return tail
    }

    /// The pair of hashes `state` (start from ``sequenceSeed``) with `bytes` and then the byte `last` mixed in, word
    /// by word, the last word padded with zeros: a key of several values, each ended by a byte no value holds, is
    /// hashed value by value where each lies, without copying them together first, and in order. For short values
    /// a third of the mixing of hashing each apart (``pair(_:followedBy:secondSeed:)``) and folding the pairs,
    /// which this replaced: each word's mix is the whole finalizer, so the state is a hash after every value. Not
    /// part of the stable hash: its values may change between versions (`sample`, whose choices must not, keys on
    /// one value and ``pair(_:followedBy:secondSeed:)``).
    package static func absorb(_ state: (UInt64, UInt64), _ bytes: UnsafeRawBufferPointer, followedBy last: UInt8)
        -> (UInt64, UInt64)
    {
        var (first, second) = state
        let left = forEachWord(of: bytes) { word in
            first = mix(first ^ word)
            second = mix(second ^ word)
        }
        let remaining = bytes.count % 8
        let tail = left | UInt64(last) << UInt64(remaining * 8)
        return (mix(first ^ tail), mix(second ^ tail))
    }

    /// Where ``absorb(_:_:followedBy:)`` starts.
    package static let sequenceSeed: (UInt64, UInt64) = (0x243F_6A88_85A3_08D3, 0x1319_8A2E_0370_7344)

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
