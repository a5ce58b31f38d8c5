import SluiceCore
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
