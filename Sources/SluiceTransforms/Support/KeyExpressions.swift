internal import SluiceCore

/// The key of an event under a list of expressions: one value (no array per event), or several.
enum EventKey: Hashable, Sendable {
    case one(JSONValue)
    case many([JSONValue])

    /// The values, in expression order.
    var values: [JSONValue] {
        switch self {
        case .one(let value): [value]
        case .many(let values): values
        }
    }

    /// The key of `event` under `expressions`.
    init(_ event: Event, _ expressions: [Expression]) throws(EvaluationError) {
        switch expressions.count {
        case 0: self = .many([])
        case 1: self = .one(try expressions[0].evaluate(event))
        default:
            var values: [JSONValue] = []
            values.reserveCapacity(expressions.count)
            for expression in expressions { values.append(try expression.evaluate(event)) }
            self = .many(values)
        }
    }

    /// A hash of the key that is the same in every run, for decisions that must repeat.
    var stableHash: UInt64 {
        switch self {
        case .one(let value): StableHash.hash(value)
        case .many(let values): StableHash.hash(.array(values))
        }
    }
}

/// Keys in least-recently-used order with a limit, without an allocation per entry: the entries live in arrays,
/// linked by index, and a dictionary maps each key to its entry. Used by `dedupe` and `throttle` to bound their
/// state.
struct RecentKeys<Value: Sendable>: Sendable {
    private struct Entry: Sendable {
        var key: EventKey
        var value: Value
        var newer = -1
        var older = -1
    }

    private var entries: [Entry] = []
    private var index: [EventKey: Int] = [:]
    private var free: [Int] = []
    /// The most recently and the least recently used entries, or -1.
    private var newest = -1
    private var oldest = -1

    /// Keys held.
    var count: Int { index.count }

    /// The value for `key`, made the most recently used; `nil` when the key is not held.
    mutating func use(_ key: EventKey) -> Value? {
        guard let position = index[key] else { return nil }
        moveToFront(position)
        return entries[position].value
    }

    /// Sets the value of the most recently used key (the one just returned by ``use(_:)``).
    mutating func setNewest(_ value: Value) {
        entries[newest].value = value
    }

    /// Adds `key` as the most recently used; returns true when the least recently used key was forgotten to stay
    /// within `limit`.
    mutating func insert(_ key: EventKey, _ value: Value, limit: Int) -> Bool {
        let position: Int
        if let reused = free.popLast() {
            entries[reused] = Entry(key: key, value: value)
            position = reused
        } else {
            entries.append(Entry(key: key, value: value))
            position = entries.count - 1
        }
        index[key] = position
        link(position)
        guard index.count > limit else { return false }
        removeOldest()
        return true
    }

    /// The least recently used key's value, if any.
    var oldestValue: Value? { oldest >= 0 ? entries[oldest].value : nil }

    /// Forgets the least recently used key.
    mutating func removeOldest() {
        let position = oldest
        guard position >= 0 else { return }
        unlink(position)
        index[entries[position].key] = nil
        entries[position].key = .many([])
        free.append(position)
    }

    private mutating func moveToFront(_ position: Int) {
        guard position != newest else { return }
        unlink(position)
        link(position)
    }

    private mutating func link(_ position: Int) {
        entries[position].older = newest
        entries[position].newer = -1
        if newest >= 0 { entries[newest].newer = position }
        newest = position
        if oldest < 0 { oldest = position }
    }

    private mutating func unlink(_ position: Int) {
        let newer = entries[position].newer
        let older = entries[position].older
        if newer >= 0 { entries[newer].older = older } else { newest = older }
        if older >= 0 { entries[older].newer = newer } else { oldest = newer }
    }
}
