internal import SluiceCore

/// A key remembered by its fingerprint: two independent 64-bit stable hashes of its bytes. State keyed this way
/// costs the same few bytes per key whatever the key's length and makes no allocation per key; two distinct keys
/// share a fingerprint with a probability near 2^-128 per pair, far below that of a hardware memory error.
struct KeyFingerprint: Hashable, Sendable {
    /// Places the key in a table, and decides `sample`'s keys.
    var hash: UInt64
    /// Tells apart keys whose `hash` is the same.
    var check: UInt64

    init(hash: UInt64, check: UInt64) {
        self.hash = hash
        self.check = check
    }

    init(_ bytes: UnsafeRawBufferPointer) {
        (hash, check) = StableHash.pair(bytes, secondSeed: Self.secondSeed)
    }

    /// The seed of ``check``.
    static let secondSeed: UInt64 = 0xD6E8_FEB8_6659_FD93
}

/// Reads the key of events under a list of expressions: each value as JSON text (straight from the event's text
/// for a top-level field, found where it was in the last event) followed by a newline (which JSON text never holds
/// raw), so that equal values are equal bytes, hashed where they lie. One value's stable hashes
/// (``StableHash/pair(_:followedBy:secondSeed:)``, which decide `sample`'s keys) are the fingerprint; several values
/// are streamed through one state (``StableHash/absorb(_:_:followedBy:)``: `dedupe` and the aggregate's groups only
/// compare their keys within a run). `dedupe`, `throttle`, `sample` and the aggregate's groups key on it without
/// making a value, a copy or an allocation per event.
struct KeyReader: Sendable {
    private let expressions: [Expression]
    /// Every expression's locator when all are top-level fields, else empty: the key is then read from an event's
    /// text where it lies.
    private var locators: [FieldLocator]
    private var states: [ExpressionState]
    /// A value written out where it could not be read in place (a parsed event, a path below the top).
    private var bytes: [UInt8] = []

    init(_ expressions: [Expression]) {
        self.expressions = expressions
        let locators = expressions.map { FieldLocator($0.pathSteps) }
        self.locators = locators.contains { $0 == nil } ? [] : locators.map { $0! }
        states = expressions.map { $0.makeState() }
        bytes.reserveCapacity(64)
    }

    /// The fingerprint of `event`'s key.
    mutating func read(_ event: borrowing Event) throws(EvaluationError) -> KeyFingerprint {
        if expressions.count == 1 {
            // A top-level field, the commonest key: hashed where it lies in the event's text.
            if !locators.isEmpty,
                let (hash, check) = event.valueTextHashes(
                    &locators[0], followedBy: Self.separator, secondSeed: KeyFingerprint.secondSeed)
            {
                return KeyFingerprint(hash: hash, check: check)
            }
            try writeValue(0, of: event)
            bytes.append(Self.separator)
            let (hash, check) = bytes.withUnsafeBytes { StableHash.pair($0, secondSeed: KeyFingerprint.secondSeed) }
            return KeyFingerprint(hash: hash, check: check)
        }
        let start = StableHash.sequenceSeed
        if !locators.isEmpty,
            let state = locators.withUnsafeMutableBufferPointer({
                event.absorbValueTexts($0, followedBy: Self.separator, into: start)
            })
        {
            return KeyFingerprint(hash: state.0, check: state.1)
        }
        var state = start
        for index in expressions.indices {
            try writeValue(index, of: event)
            state = bytes.withUnsafeBytes { StableHash.absorb(state, $0, followedBy: Self.separator) }
        }
        return KeyFingerprint(hash: state.0, check: state.1)
    }

    /// Ends each value's text.
    private static let separator = UInt8(ascii: "\n")

    /// Writes value `index` of `event`'s key as JSON text into ``bytes``, in place of what they held.
    private mutating func writeValue(_ index: Int, of event: borrowing Event) throws(EvaluationError) {
        bytes.removeAll(keepingCapacity: true)
        JSONWriter.write(try expressions[index].evaluate(event, &states[index]), to: &bytes)
    }
}

/// Keys (by fingerprint) in least-recently-used order with a limit, each with a value. The entries live in one
/// array, linked by index, found through a ``FingerprintTable``: nothing is allocated per key or per lookup, so the
/// state's memory is the limit times a fixed entry size. Used by `dedupe` and `throttle` to bound their state.
struct RecentKeys<Value: Sendable>: Sendable {
    private struct Entry: Sendable {
        var key: KeyFingerprint
        var value: Value
        /// The links, as 32-bit numbers (a limit is at most 10^8 keys): `dedupe`'s entries take 32 bytes instead of
        /// 40, two to a cache line, and at its default limit of 100,000 keys the state is 0.8 MB smaller.
        var newerLink: Int32 = -1
        var olderLink: Int32 = -1

        var newer: Int {
            get { Int(newerLink) }
            set { newerLink = Int32(truncatingIfNeeded: newValue) }
        }
        var older: Int {
            get { Int(olderLink) }
            set { olderLink = Int32(truncatingIfNeeded: newValue) }
        }
    }

    /// The two ends of the recency list: the most recently and the least recently used entries, or -1.
    private struct Ends: Sendable {
        var newest = -1
        var oldest = -1

        func link(_ entry: Int, in entries: UnsafeMutableBufferPointer<Entry>) -> Ends {
            entries[entry].older = newest
            entries[entry].newer = -1
            if newest >= 0 { entries[newest].newer = entry }
            return Ends(newest: entry, oldest: oldest < 0 ? entry : oldest)
        }

        func unlink(_ entry: Int, in entries: UnsafeMutableBufferPointer<Entry>) -> Ends {
            let newer = entries[entry].newer
            let older = entries[entry].older
            var ends = self
            if newer >= 0 { entries[newer].older = older } else { ends.newest = older }
            if older >= 0 { entries[older].newer = newer } else { ends.oldest = newer }
            return ends
        }
    }

    private var entries: [Entry] = []
    private var free: [Int] = []
    private var table = FingerprintTable()
    private var ends = Ends()

    /// Keys held.
    var count: Int { table.count }

    /// The value for `key`, made the most recently used; `nil` when it is not held.
    mutating func use(_ key: KeyFingerprint) -> Value? {
        guard let entry = table.find(key, keyOf: { entries[$0].key }) else { return nil }
        if entry != ends.newest {
            // One access to the array for the relinking, rather than a uniqueness check at every field written.
            ends = entries.withUnsafeMutableBufferPointer { entries in
                ends.unlink(entry, in: entries).link(entry, in: entries)
            }
        }
        return entries[entry].value
    }

    /// Sets the value of the most recently used key (the one just returned by ``use(_:)``).
    mutating func setNewest(_ value: Value) {
        entries[ends.newest].value = value
    }

    /// Adds a key that is not held, as the most recently used; returns true when the least recently used key was
    /// forgotten to stay within `limit` (at least 1).
    mutating func insert(_ key: KeyFingerprint, _ value: Value, limit: Int) -> Bool {
        // At the limit the least recently used key goes first, and its entry, just read, takes the new key.
        let forgotten = count >= limit ? unlinkOldest() : nil
        let entry: Int
        if let reused = forgotten ?? free.popLast() {
            entry = reused
        } else {
            entries.append(Entry(key: key, value: value))
            entry = entries.count - 1
        }
        ends = entries.withUnsafeMutableBufferPointer { entries in
            entries[entry].key = key
            entries[entry].value = value
            return ends.link(entry, in: entries)
        }
        table.insert(entry, hash: key.hash)
        return forgotten != nil
    }

    /// Reads ahead, so that the fetches overlap, the table slots that using `keys` and forgetting the `forgetting`
    /// least recently used keys will read; returns what it read, which the caller keeps so that the reads are
    /// made. Worth it where the table is larger than the caches.
    func warm(_ keys: [KeyFingerprint?], forgetting: Int) -> UInt64 {
        var read: UInt64 = 0
        for case let key? in keys { read ^= table.warm(key.hash) }
        var entry = ends.oldest
        for _ in 0..<forgetting where entry >= 0 {
            read ^= table.warm(entries[entry].key.hash)
            entry = entries[entry].newer
        }
        return read
    }

    /// Whether the table is large enough for ``warm(_:forgetting:)`` to pay.
    var isLarge: Bool { count > 16_384 }

    /// The least recently used key's value, if any.
    var oldestValue: Value? { ends.oldest >= 0 ? entries[ends.oldest].value : nil }

    /// Forgets the least recently used key.
    mutating func removeOldest() {
        if let entry = unlinkOldest() { free.append(entry) }
    }

    /// Forgets the least recently used key, if any, and returns its entry, now unused.
    private mutating func unlinkOldest() -> Int? {
        let entry = ends.oldest
        guard entry >= 0 else { return nil }
        ends = entries.withUnsafeMutableBufferPointer { ends.unlink(entry, in: $0) }
        table.remove(entry, hash: entries[entry].key.hash)
        return entry
    }
}
