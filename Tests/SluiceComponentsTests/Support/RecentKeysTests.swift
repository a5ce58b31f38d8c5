import SluiceCore
import SluiceTesting
import Testing

@testable import SluiceTransforms

struct RecentKeysTests {
    /// Random uses, inserts and removals against a plain model of an LRU cache. Hashes are either real or
    /// squeezed into 64 values (the check tells the keys apart), so that probe runs are long and every removal has
    /// entries to move back; the keys outnumber the table's first size, so it grows.
    @Test(arguments: [false, true]) func behavesLikeAnLRUCacheWhateverTheHashes(collide: Bool) {
        var random = SplitMix64(seed: collide ? 7 : 11)
        var keys = RecentKeys<Int>()
        // The model: keys from least to most recently used, and their values.
        var order: [Int] = []
        var values: [Int: Int] = [:]
        let limit = 1_200
        var forgotten = 0
        func fingerprint(_ key: Int) -> KeyFingerprint {
            var real = Array("key-\(key)\n".utf8).withUnsafeBytes { KeyFingerprint($0) }
            if collide { real.hash %= 64 }
            return real
        }
        for step in 0..<20_000 {
            let key = Int(random.next() % 2_000)
            switch random.next() % 100 {
            case 0..<3:
                keys.removeOldest()
                if !order.isEmpty { values[order.removeFirst()] = nil }
            default:
                let found = keys.use(fingerprint(key))
                #expect(found == values[key], "step \(step), key \(key)")
                guard found == nil else {
                    keys.setNewest(step)
                    order.removeAll { $0 == key }
                    order.append(key)
                    values[key] = step
                    continue
                }
                if keys.insert(fingerprint(key), step, limit: limit) { forgotten += 1 }
                order.append(key)
                values[key] = step
                if order.count > limit {
                    values[order.removeFirst()] = nil
                    #expect(forgotten > 0)
                }
            }
            #expect(keys.count == order.count)
            #expect(keys.oldestValue == order.first.flatMap { values[$0] })
        }
        #expect(forgotten > 0, "the limit was reached")
        // Every key the model holds is still found, with its value.
        for key in order { #expect(keys.use(fingerprint(key)) == values[key]) }
    }
}
