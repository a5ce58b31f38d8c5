internal import SluiceCore

/// The groups of an `aggregate` that have an open window, numbered densely: each one's key (by the fingerprint of
/// its values' JSON text, as `dedupe` keys events), its values for the output, how many open states it has, and
/// the state its last event went to. A group is forgotten, and its number reused, when its last state closes, so
/// the groups held are never more than the open states.
struct Groups: Sendable {
    /// How many values a group has (the `group_by` expressions).
    let width: Int
    private var table = FingerprintTable()
    private var keys: [KeyFingerprint] = []
    /// Every group's values, `width` of them from `group * width`.
    private var values: [JSONValue] = []
    private var openStates: [Int] = []
    /// The window end and the state of the group's last event: most events go where the one before them went.
    var lastEnd: [Int64] = []
    var lastState: [Int32] = []
    /// When the group was first seen (counting every group), to order sessions ending together.
    private(set) var firstSeen: [Int] = []
    /// Session windows only: the group's open sessions, sorted by start.
    var sessions: [[Int32]] = []
    private var free: [Int32] = []
    private var seen = 0

    init(width: Int) {
        self.width = width
    }

    /// The number of the group whose key is `key`, if it has an open window.
    func number(of key: KeyFingerprint) -> Int32? {
        table.find(key, keyOf: { keys[$0] }).map { Int32($0) }
    }

    /// Adds the group of `key` with `groupValues` (`width` of them) and returns its number.
    mutating func add(_ key: KeyFingerprint, _ groupValues: [JSONValue]) -> Int32 {
        assert(groupValues.count == width)
        let group: Int32
        if let reused = free.popLast() {
            group = reused
            let index = Int(reused)
            keys[index] = key
            values.replaceSubrange((index * width)..<(index * width + width), with: groupValues)
            openStates[index] = 0
            lastEnd[index] = .min
            firstSeen[index] = seen
            sessions[index].removeAll(keepingCapacity: true)
        } else {
            group = Int32(keys.count)
            keys.append(key)
            values.append(contentsOf: groupValues)
            openStates.append(0)
            lastEnd.append(.min)
            lastState.append(-1)
            firstSeen.append(seen)
            sessions.append([])
        }
        seen += 1
        table.insert(Int(group), hash: key.hash)
        return group
    }

    /// The values of `group`, in `group_by` order.
    func values(of group: Int32) -> ArraySlice<JSONValue> {
        values[(Int(group) * width)..<(Int(group) * width + width)]
    }

    /// Counts a state opened for `group`.
    mutating func opened(in group: Int32) {
        openStates[Int(group)] += 1
    }

    /// Counts a state of `group` closed; the group is forgotten with its last one.
    mutating func closed(_ state: Int32, in group: Int32) {
        let index = Int(group)
        if lastState[index] == state { lastEnd[index] = .min }
        openStates[index] -= 1
        guard openStates[index] == 0 else { return }
        table.remove(index, hash: keys[index].hash)
        for slot in (index * width)..<(index * width + width) { values[slot] = .null }
        free.append(group)
    }
}
