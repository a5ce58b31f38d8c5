internal import SluiceCore

/// The groups of an `aggregate` that it holds (see below), numbered densely: each one's key (by the fingerprint of
/// its values' JSON text, as `dedupe` keys events), its values for the output, how many open states it has, and
/// the state its last event went to. Without ``keepsIdle`` a group is forgotten, and its number reused, when its
/// last state closes, so the groups held are never more than the open states.
///
/// With ``keepsIdle`` (tumbling and hopping windows) a group whose last state closed is kept, idle, until the next
/// window closes, and forgotten then unless an event opened a state for it in between: a device that reports in
/// every window is found again rather than forgotten and added back once a window (its values evaluated, its key
/// put back into the table), which was a tenth of what closing windows cost. The groups held are then those of
/// the open windows and of the window closed last.
struct Groups: Sendable {
    /// How many values a group has (the `group_by` expressions).
    let width: Int
    let keepsIdle: Bool
    private var table = FingerprintTable()
    private var keys: [KeyFingerprint] = []
    /// Every group's values, `width` of them from `group * width`.
    private var values: [JSONValue] = []
    /// How many open states the group has: the length of its ``states`` list, except while `aggregate` has taken
    /// that list out to merge sessions (the merged ones are closed then, and the group must not look empty).
    private var openStates: [Int] = []
    /// The window end and the state of the group's last event: most events go where the one before them went.
    var lastEnd: [Int64] = []
    var lastState: [Int32] = []
    /// The group's open states: its sessions, sorted by start, or its windows' states in the order they opened
    /// (a group has one open window but for a moment after a window ends; with hopping windows, one state per pane).
    var states: [[Int32]] = []
    private var free: [Int32] = []
    /// The round of closing in which the group went idle, or -1 while it has an open state (or is free).
    private var idleRound: [Int] = []
    /// Groups in the order they went idle, with the round; an entry whose group has been used since is stale.
    private var idle: [(group: Int32, round: Int)] = []
    private var idleHead = 0
    /// Counts the windows closed (``endRound()``).
    private var round = 0

    init(width: Int, keepsIdle: Bool) {
        self.width = width
        self.keepsIdle = keepsIdle
    }

    /// The number of the group whose key is `key`, if it is held (it has an open window, or is idle).
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
            idleRound[index] = -1
            states[index].removeAll(keepingCapacity: true)
        } else {
            group = Int32(keys.count)
            keys.append(key)
            values.append(contentsOf: groupValues)
            openStates.append(0)
            lastEnd.append(.min)
            lastState.append(-1)
            idleRound.append(-1)
            states.append([])
        }
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
        idleRound[Int(group)] = -1
    }

    /// Counts a state of `group` closed and takes it out of the group's ``states``; the group is forgotten with its
    /// last one, or goes idle (``keepsIdle``).
    mutating func closed(_ state: Int32, in group: Int32) {
        let index = Int(group)
        if lastState[index] == state { lastEnd[index] = .min }
        if let position = states[index].firstIndex(of: state) { states[index].remove(at: position) }
        openStates[index] -= 1
        guard openStates[index] == 0 else { return }
        if keepsIdle {
            idleRound[index] = round
            idle.append((group, round))
        } else {
            forget(index)
        }
    }

    /// Ends a round of closing (one window): the groups that were idle before it and stayed idle through it are
    /// forgotten.
    mutating func endRound() {
        while idleHead < idle.count, idle[idleHead].round < round {
            let (group, wentIdle) = idle[idleHead]
            idleHead += 1
            if idleRound[Int(group)] == wentIdle { forget(Int(group)) }
        }
        if idleHead > 0, idleHead * 2 >= idle.count {
            idle.removeFirst(idleHead)
            idleHead = 0
        }
        round += 1
    }

    private mutating func forget(_ index: Int) {
        table.remove(index, hash: keys[index].hash)
        for slot in (index * width)..<(index * width + width) { values[slot] = .null }
        idleRound[index] = -1
        free.append(Int32(index))
    }
}
