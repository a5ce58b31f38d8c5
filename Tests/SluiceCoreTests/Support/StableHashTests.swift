import SluiceCore
import SluiceTesting
import Testing

struct StableHashTests {
    /// The hash decides which keys `sample` keeps and feeds the sketches, so it must never change between runs,
    /// machines or versions: these values are fixed.
    @Test(arguments: [
        ("", 0x6c7d_3a72_4650_80d7 as UInt64),
        ("a", 0x6b8c_e94b_0860_ad76),
        ("dev-0001\n", 0x1f74_f47f_d279_5e46),
        ("\"dev-0001\"\n12345\n", 0xcef5_5509_1e20_1496),
        ("0123456789abcdefXYZ", 0x312d_952c_a474_5e21),
    ])
    func theHashOfBytesNeverChanges(text: String, expected: UInt64) {
        let bytes = Array(text.utf8)
        #expect(bytes.withUnsafeBytes { StableHash.hash($0) } == expected)
        // The pair's first hash is the same hash; its second is the hash with the second seed.
        let pair = bytes.withUnsafeBytes { StableHash.pair($0, secondSeed: 42) }
        #expect(pair.0 == expected)
        #expect(pair.1 == bytes.withUnsafeBytes { StableHash.hash($0, seed: 42) })
        #expect(pair.1 != pair.0)
    }

    /// The hash as its definition says, a byte at a time: the length, each whole eight-byte word mixed in, then the
    /// bytes after them as one little-endian word. Every length from 0 to 40, at offsets that do and do not align.
    @Test func theHashIsItsDefinitionAtEveryLength() {
        func mix(_ value: UInt64) -> UInt64 {
            var x = value
            x ^= x >> 33
            x = x &* 0xFF51_AFD7_ED55_8CCD
            x ^= x >> 33
            x = x &* 0xC4CE_B9FE_1A85_EC53
            return x ^ x >> 33
        }
        func reference(_ bytes: ArraySlice<UInt8>, seed: UInt64) -> UInt64 {
            var state = seed ^ UInt64(bytes.count) &* 0xC2B2_AE3D_27D4_EB4F
            var word: UInt64 = 0
            for (position, byte) in bytes.enumerated() {
                word |= UInt64(byte) << UInt64(position % 8 * 8)
                if position % 8 == 7 {
                    state = mix(state ^ word)
                    word = 0
                }
            }
            return mix(state ^ word ^ 0xFF51_AFD7_ED55_8CCD)
        }
        var generator = SplitMix64(seed: 7)
        let text = (0..<48).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        for start in 0..<3 {
            for count in 0...40 {
                let bytes = text[start..<(start + count)]
                let pair = bytes.withUnsafeBytes { StableHash.pair($0, secondSeed: 42) }
                #expect(pair.0 == reference(bytes, seed: 0x9E37_79B9_7F4A_7C15), "\(count) bytes from \(start)")
                #expect(pair.1 == reference(bytes, seed: 42), "\(count) bytes from \(start)")
                #expect(bytes.withUnsafeBytes { StableHash.hash($0) } == pair.0)
            }
        }
    }

    /// Hashing bytes followed by one more byte in place gives what hashing them copied out with it gives, at every
    /// length around the eight-byte words.
    @Test func bytesFollowedByAByteHashAsThoughCopiedTogether() {
        let text = Array("\"dev-0001\",\"region\":\"eu-west\",12345.5,true,null,\"\u{e9}t\u{e9}\"".utf8)
        for count in 0...text.count {
            let bytes = Array(text.prefix(count))
            let together = (bytes + [0x0A]).withUnsafeBytes { StableHash.pair($0, secondSeed: 42) }
            let apart = bytes.withUnsafeBytes { StableHash.pair($0, followedBy: 0x0A, secondSeed: 42) }
            #expect(apart == together, "\(count) bytes")
        }
    }
}
