/// Finds keys by fingerprint for state that keeps its keys in an array of its own (``RecentKeys``, the aggregate's
/// groups): an open-addressing table of entry numbers (linear probing, deletion by backward shift) that allocates
/// nothing per key or per lookup, and is at most half full.
struct FingerprintTable: Sendable {
    /// 0 is empty, else the entry's number + 1 in the high 32 bits and the low 32 bits of its key's hash in the low
    /// ones, so that probing and moving slots read no entry until a hash matches, and growing reads none at all.
    /// The capacity is a power of two.
    private var slots = [UInt64](repeating: 0, count: 1024)
    /// Entries held.
    private(set) var count = 0

    /// The entry holding `key`, where `keyOf(entry)` is the key entry `entry` holds.
    func find(_ key: KeyFingerprint, keyOf: (Int) -> KeyFingerprint) -> Int? {
        let mask = slots.count - 1
        let tag = key.hash & 0xFFFF_FFFF
        var index = Int(truncatingIfNeeded: key.hash) & mask
        while true {
            let slot = slots[index]
            if slot == 0 { return nil }
            if slot & 0xFFFF_FFFF == tag, keyOf(Self.entry(slot)) == key { return Self.entry(slot) }
            index = (index + 1) & mask
        }
    }

    /// The slot where a key of hash `hash` is looked for first and one eight slots on (the next cache line, where a
    /// probe or a removal's shift often runs on), read and returned only so that they are in the cache when the
    /// lookup comes: a caller that knows many keys ahead reads all their slots first, and the memory fetches
    /// overlap instead of waiting one after another.
    func warm(_ hash: UInt64) -> UInt64 {
        let mask = slots.count - 1
        let home = Int(truncatingIfNeeded: hash) & mask
        return slots[home] ^ slots[(home + 8) & mask]
    }

    /// Adds `entry`, whose key's hash is `hash` and which the table does not hold.
    mutating func insert(_ entry: Int, hash: UInt64) {
        count += 1
        if count * 2 > slots.count { grow() }
        place(Self.slot(entry, hash))
    }

    /// Removes `entry`, whose key's hash is `hash`, moving back the slots after it that would no longer be found.
    mutating func remove(_ entry: Int, hash: UInt64) {
        let slot = Self.slot(entry, hash)
        // One access to the array for the whole shift, rather than a uniqueness check at every slot written.
        slots.withUnsafeMutableBufferPointer { slots in
            let mask = slots.count - 1
            var hole = Int(truncatingIfNeeded: hash) & mask
            while slots[hole] != slot { hole = (hole + 1) & mask }
            var next = hole
            while true {
                next = (next + 1) & mask
                let moving = slots[next]
                if moving == 0 { break }
                let home = Int(truncatingIfNeeded: moving) & mask
                // `moving` may fill the hole unless its home lies cyclically in (hole, next]: unless it is nearer
                // to `next` than the hole is. Written without a branch, which went either way at random.
                let fills = (next &- home) & mask >= (next &- hole) & mask
                slots[hole] = fills ? moving : slots[hole]
                hole = fills ? next : hole
            }
            slots[hole] = 0
        }
        count -= 1
    }

    private static func slot(_ entry: Int, _ hash: UInt64) -> UInt64 {
        UInt64(entry + 1) << 32 | hash & 0xFFFF_FFFF
    }

    private static func entry(_ slot: UInt64) -> Int { Int(slot >> 32) - 1 }

    /// Puts `slot` at its home or the first free slot after it. A slot's low bits are its hash's, which is all
    /// the home needs while the capacity stays under 2^32.
    private mutating func place(_ slot: UInt64) {
        slots.withUnsafeMutableBufferPointer { slots in
            let mask = slots.count - 1
            var index = Int(truncatingIfNeeded: slot) & mask
            while slots[index] != 0 { index = (index + 1) & mask }
            slots[index] = slot
        }
    }

    private mutating func grow() {
        let old = slots
        slots = [UInt64](repeating: 0, count: old.count * 2)
        for slot in old where slot != 0 { place(slot) }
    }
}
