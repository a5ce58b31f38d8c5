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
/// raw), so that equal values are equal bytes, hashed where it lies; the values' hashes folded in order give the
/// fingerprint (one value's are the fingerprint). `dedupe`, `throttle`, `sample` and the aggregate's groups key on
/// it without making a value, a copy or an allocation per event.
struct KeyReader: Sendable {
    private let expressions: [Expression]
    private var locators: [FieldLocator?]
    private var states: [ExpressionState]
    /// A value written out where it could not be read in place (a parsed event, a path below the top).
    private var bytes: [UInt8] = []

    init(_ expressions: [Expression]) {
        self.expressions = expressions
        locators = expressions.map { FieldLocator($0.pathSteps) }
        states = expressions.map { $0.makeState() }
        bytes.reserveCapacity(64)
    }

    /// The fingerprint of `event`'s key.
    mutating func read(_ event: borrowing Event) throws(EvaluationError) -> KeyFingerprint {
        if expressions.count == 1 {
            let (hash, check) = try valueHashes(0, of: event)
            return KeyFingerprint(hash: hash, check: check)
        }
        var state = StableHash.sequenceSeed
        for index in expressions.indices { state = StableHash.fold(state, try valueHashes(index, of: event)) }
        return KeyFingerprint(hash: state.0, check: state.1)
    }

    /// The hashes of value `index` of `event`'s key as text, with its newline.
    private mutating func valueHashes(_ index: Int, of event: borrowing Event) throws(EvaluationError) -> (UInt64, UInt64)
    {
        // A top-level field, the commonest key: hashed where it lies in the event's text.
        if locators[index] != nil,
            let hashes = event.valueTextHashes(
                &locators[index]!, followedBy: UInt8(ascii: "\n"), secondSeed: KeyFingerprint.secondSeed)
        {
            return hashes
        }
        bytes.removeAll(keepingCapacity: true)
        JSONWriter.write(try expressions[index].evaluate(event, &states[index]), to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
        return bytes.withUnsafeBytes { StableHash.pair($0, secondSeed: KeyFingerprint.secondSeed) }
    }
}

/// Keys (by fingerprint) in least-recently-used order with a limit, each with a value. The entries live in one
/// array, linked by index, found through a ``FingerprintTable``: nothing is allocated per key or per lookup, so the
/// state's memory is the limit times a fixed entry size. Used by `dedupe` and `throttle` to bound their state.
struct RecentKeys<Value: Sendable>: Sendable {
    private struct Entry: Sendable {
        var key: KeyFingerprint
        var value: Value
        var newer = -1
        var older = -1
    }

    private var entries: [Entry] = []
    private var free: [Int] = []
    private var table = FingerprintTable()
    /// The most recently and the least recently used entries, or -1.
    private var newest = -1
    private var oldest = -1

    /// Keys held.
    var count: Int { table.count }

    /// The value for `key`, made the most recently used; `nil` when it is not held.
    mutating func use(_ key: KeyFingerprint) -> Value? {
        guard let entry = table.find(key, keyOf: { entries[$0].key }) else { return nil }
        moveToFront(entry)
        return entries[entry].value
    }

    /// Sets the value of the most recently used key (the one just returned by ``use(_:)``).
    mutating func setNewest(_ value: Value) {
        entries[newest].value = value
    }

    /// Adds a key that is not held, as the most recently used; returns true when the least recently used key was
    /// forgotten to stay within `limit`.
    mutating func insert(_ key: KeyFingerprint, _ value: Value, limit: Int) -> Bool {
        let entry: Int
        if let reused = free.popLast() {
            entries[reused] = Entry(key: key, value: value)
            entry = reused
        } else {
            entries.append(Entry(key: key, value: value))
            entry = entries.count - 1
        }
        table.insert(entry, hash: key.hash)
        link(entry)
        guard count > limit else { return false }
        removeOldest()
        return true
    }

    /// Reads ahead, so that the fetches overlap, the table slots that using `keys` and forgetting the `forgetting`
    /// least recently used keys will read; returns what it read, which the caller keeps so that the reads are
    /// made. Worth it where the table is larger than the caches.
    func warm(_ keys: [KeyFingerprint?], forgetting: Int) -> UInt64 {
        var read: UInt64 = 0
        for case let key? in keys { read ^= table.warm(key.hash) }
        var entry = oldest
        for _ in 0..<forgetting where entry >= 0 {
            read ^= table.warm(entries[entry].key.hash)
            entry = entries[entry].newer
        }
        return read
    }

    /// Whether the table is large enough for ``warm(_:forgetting:)`` to pay.
    var isLarge: Bool { count > 16_384 }

    /// The least recently used key's value, if any.
    var oldestValue: Value? { oldest >= 0 ? entries[oldest].value : nil }

    /// Forgets the least recently used key.
    mutating func removeOldest() {
        let entry = oldest
        guard entry >= 0 else { return }
        unlink(entry)
        table.remove(entry, hash: entries[entry].key.hash)
        free.append(entry)
    }

    // MARK: - Recency

    private mutating func moveToFront(_ entry: Int) {
        guard entry != newest else { return }
        unlink(entry)
        link(entry)
    }

    private mutating func link(_ entry: Int) {
        entries[entry].older = newest
        entries[entry].newer = -1
        if newest >= 0 { entries[newest].newer = entry }
        newest = entry
        if oldest < 0 { oldest = entry }
    }

    private mutating func unlink(_ entry: Int) {
        let newer = entries[entry].newer
        let older = entries[entry].older
        if newer >= 0 { entries[newer].older = older } else { newest = older }
        if older >= 0 { entries[older].newer = newer } else { oldest = newer }
    }
}
