import SluiceCore
import SluiceTesting
import Testing

@testable import SluiceTransforms

struct FingerprintTableTests {
    /// Random inserts and removals against a dictionary. Hashes are either real or squeezed into 64 values (the
    /// check tells the keys apart), so that probe runs are long, wrap around the end of the table, and every removal
    /// has slots to move back; the table grows twice on the way.
    @Test(arguments: [false, true]) func findsWhatADictionaryFinds(collide: Bool) {
        var random = SplitMix64(seed: collide ? 3 : 5)
        var table = FingerprintTable()
        var keys: [KeyFingerprint] = []
        var free: [Int] = []
        var model: [KeyFingerprint: Int] = [:]
        func fingerprint(_ key: UInt64) -> KeyFingerprint {
            var real = Array("k\(key)".utf8).withUnsafeBytes { KeyFingerprint($0) }
            if collide { real.hash = (real.hash % 64) | 0xFFFF_FFC0 }
            return real
        }
        for step in 0..<30_000 {
            let key = fingerprint(random.next() % 3_000)
            let found = table.find(key, keyOf: { keys[$0] })
            #expect(found == model[key], "step \(step)")
            if let entry = found {
                if random.next() % 2 == 0 {
                    table.remove(entry, hash: key.hash)
                    model[key] = nil
                    free.append(entry)
                }
            } else {
                let entry: Int
                if let reused = free.popLast() {
                    keys[reused] = key
                    entry = reused
                } else {
                    keys.append(key)
                    entry = keys.count - 1
                }
                table.insert(entry, hash: key.hash)
                model[key] = entry
            }
            #expect(table.count == model.count)
        }
        #expect(keys.count > 1_024, "the table grew past its first size twice")
        for (key, entry) in model { #expect(table.find(key, keyOf: { keys[$0] }) == entry) }
    }
}
