internal import SluiceCore

/// The state of every open group window of an `aggregate` (one per group and window), column by column: state `s`
/// keeps its group, bounds and counts at index `s` of the per-state columns, and its accumulators at
/// `s * width + k` of the column of their kind (`width` being how many of that kind each state has).
///
/// A closed state's index is reused by the next state opened, its accumulators reset in place (a sketch keeps its
/// buckets' storage), so once the open windows reach their usual number nothing is allocated per window; and
/// folding an event writes plain values into arrays the transform owns, with no object, no hash table and no
/// reference count per state.
struct WindowStates: Sendable {
    let layout: AccumulatorLayout
    /// Which aggregations fold into each kind of column: a `let`, so that reading it while the columns change
    /// copies nothing.
    private let plan: FoldPlan

    // MARK: Per state

    /// The group, as numbered by ``Groups``.
    private(set) var group: [Int32] = []
    /// The bounds in epoch milliseconds; a session's grow as it does.
    var start: [Int64] = []
    var end: [Int64] = []
    /// The latest event time folded into a session (its end is this plus the gap).
    var lastTime: [Int64] = []
    /// True for a free index, and for a session emitted or merged into another (its session-heap entries are
    /// stale).
    private(set) var closed: [Bool] = []
    /// How many times the index was opened, so that a session-heap entry for an earlier state of the same number
    /// is known to be stale.
    private(set) var generation: [UInt32] = []
    /// When the state was opened, counting every state opened: sessions that end together are emitted in the
    /// order they began (of sessions joined together, the first opened takes in the others).
    private(set) var opened: [Int] = []
    private var openings = 0
    /// The earliest ingest time among the events folded (`UInt64.max` for a free index): the emitted event carries
    /// it, so that they stay held until it is written.
    private(set) var firstIngestNanos: [UInt64] = []
    private var free: [Int32] = []

    // MARK: Accumulators, by kind

    private var counts: [Int] = []
    private var sums: [CompensatedSum] = []
    private var moments: [Moments] = []
    private var extremes: [Extreme] = []
    private var ordered: [Ordered] = []
    private var sketches: [DDSketch] = []
    private var distincts: [DistinctCounter] = []
    private var collected: [Collected] = []

    /// States for aggregations laid out by `layout`, aggregation `k` reading argument `argumentIndex[k]` (none for
    /// `count()`), a `collect` keeping at most `collectLimits[k]` values.
    init(layout: AccumulatorLayout, argumentIndex: [Int?], collectLimits: [Int]) {
        self.layout = layout
        plan = FoldPlan(layout, argumentIndex: argumentIndex, collectLimits: collectLimits)
        // An empty array shares one static buffer, which is never unique: a column of a kind this aggregate does not
        // use would be copied into a buffer of its own whenever a fold that may write it runs. Each gets one now.
        counts.reserveCapacity(1)
        sums.reserveCapacity(1)
        moments.reserveCapacity(1)
        extremes.reserveCapacity(1)
        ordered.reserveCapacity(1)
        sketches.reserveCapacity(1)
        distincts.reserveCapacity(1)
        collected.reserveCapacity(1)
    }

    /// Opens a state for `group` over `start..<end`, with every accumulator empty.
    mutating func open(group: Int32, start: Int64, end: Int64) -> Int32 {
        guard let state = free.popLast() else {
            self.group.append(group)
            self.start.append(start)
            self.end.append(end)
            lastTime.append(start)
            closed.append(false)
            generation.append(0)
            opened.append(openings)
            openings += 1
            firstIngestNanos.append(.max)
            counts.append(contentsOf: repeatElement(0, count: layout.counts))
            sums.append(contentsOf: repeatElement(CompensatedSum(), count: layout.sums))
            moments.append(contentsOf: repeatElement(Moments(), count: layout.moments))
            extremes.append(contentsOf: repeatElement(Extreme(), count: layout.extremes))
            ordered.append(contentsOf: repeatElement(Ordered(), count: layout.ordered))
            sketches.append(contentsOf: repeatElement(DDSketch(), count: layout.sketches))
            distincts.append(contentsOf: repeatElement(DistinctCounter(), count: layout.distincts))
            collected.append(contentsOf: repeatElement(Collected(), count: layout.collected))
            return Int32(self.group.count - 1)
        }
        let index = Int(state)
        self.group[index] = group
        self.start[index] = start
        self.end[index] = end
        lastTime[index] = start
        closed[index] = false
        generation[index] &+= 1
        opened[index] = openings
        openings += 1
        firstIngestNanos[index] = .max
        for slot in Self.range(index, layout.counts) { counts[slot] = 0 }
        for slot in Self.range(index, layout.sums) { sums[slot] = CompensatedSum() }
        for slot in Self.range(index, layout.moments) { moments[slot] = Moments() }
        for slot in Self.range(index, layout.extremes) { extremes[slot] = Extreme() }
        for slot in Self.range(index, layout.ordered) { ordered[slot] = Ordered() }
        for slot in Self.range(index, layout.sketches) { sketches[slot].reset() }
        for slot in Self.range(index, layout.distincts) { distincts[slot].reset() }
        for slot in Self.range(index, layout.collected) { collected[slot].reset() }
        return state
    }

    /// Frees `state` for reuse; its accumulators are reset when it is opened again.
    mutating func close(_ state: Int32) {
        let index = Int(state)
        precondition(!closed[index], "A window state was closed twice.")
        closed[index] = true
        firstIngestNanos[index] = .max
        free.append(state)
    }

    /// The earliest ingest time among the events of every open state, or `UInt64.max`.
    var earliestIngestNanos: UInt64 { firstIngestNanos.min() ?? .max }

    /// The latest end among open states.
    var latestEnd: Int64? {
        var latest: Int64?
        for index in end.indices where !closed[index] { latest = max(latest ?? .min, end[index]) }
        return latest
    }

    private static func range(_ state: Int, _ width: Int) -> Range<Int> {
        (state * width)..<(state * width + width)
    }

    // MARK: - Folding

    /// Folds one event into `state`: for each aggregation, its argument's reading in `readings` (which the caller
    /// has checked is a number or null where the function needs one; a null is skipped) and, for the functions
    /// that keep values, its value in `values`; its time and its ingest time.
    ///
    /// Kind by kind: each column written makes its array unique first (a runtime call), and a loop over every
    /// aggregation whatever its kind made every column unique, the unused ones too, for every event.
    mutating func fold(_ state: Int32, _ readings: [Reading], _ values: [JSONValue], time: Int64, ingestNanos: UInt64) {
        let index = Int(state)
        firstIngestNanos[index] = min(firstIngestNanos[index], ingestNanos)
        if !plan.counts.isEmpty {
            for step in plan.counts where step.argument < 0 || !readings[step.argument].isNull {
                counts[index * layout.counts + step.slot] += 1
            }
        }
        if !plan.sums.isEmpty {
            for step in plan.sums where !readings[step.argument].isNull {
                sums[index * layout.sums + step.slot].add(readings[step.argument])
            }
        }
        if !plan.moments.isEmpty {
            for step in plan.moments where !readings[step.argument].isNull {
                moments[index * layout.moments + step.slot].add(readings[step.argument].number)
            }
        }
        if !plan.extremes.isEmpty {
            for step in plan.extremes where !readings[step.argument].isNull {
                extremes[index * layout.extremes + step.slot].add(readings[step.argument], isMax: step.flag)
            }
        }
        if !plan.sketches.isEmpty {
            for step in plan.sketches where !readings[step.argument].isNull {
                sketches[index * layout.sketches + step.slot].add(readings[step.argument].number)
            }
        }
        if !plan.ordered.isEmpty {
            for step in plan.ordered where !readings[step.argument].isNull {
                ordered[index * layout.ordered + step.slot].add(values[step.argument], time: time, isLast: step.flag)
            }
        }
        if !plan.distincts.isEmpty {
            for step in plan.distincts where !readings[step.argument].isNull {
                distincts[index * layout.distincts + step.slot].add(hash: StableHash.hash(values[step.argument]))
            }
        }
        if !plan.collected.isEmpty {
            for step in plan.collected where !readings[step.argument].isNull {
                collected[index * layout.collected + step.slot].add(
                    values[step.argument], time: time, limit: step.limit)
            }
        }
    }

    /// The aggregations of each kind of column, in order.
    private struct FoldPlan: Sendable {
        /// One aggregation: the argument it reads (-1 for `count()`), its slot among its state's accumulators of
        /// its kind, `max` or `last` (against `min`, `first`), and a `collect` limit.
        struct Step: Sendable {
            let argument: Int
            let slot: Int
            var flag = false
            var limit = 0
        }

        var counts: [Step] = []
        var sums: [Step] = []
        var moments: [Step] = []
        var extremes: [Step] = []
        var ordered: [Step] = []
        var sketches: [Step] = []
        var distincts: [Step] = []
        var collected: [Step] = []

        init(_ layout: AccumulatorLayout, argumentIndex: [Int?], collectLimits: [Int]) {
            for (position, slot) in layout.slots.enumerated() {
                let argument = argumentIndex[position] ?? -1
                switch slot {
                case .count(let k): counts.append(Step(argument: argument, slot: k))
                case .sum(let k): sums.append(Step(argument: argument, slot: k))
                case .moments(let k): moments.append(Step(argument: argument, slot: k))
                case .extreme(let k, let isMax): extremes.append(Step(argument: argument, slot: k, flag: isMax))
                case .ordered(let k, let isLast): ordered.append(Step(argument: argument, slot: k, flag: isLast))
                case .sketch(let k): sketches.append(Step(argument: argument, slot: k))
                case .distinct(let k): distincts.append(Step(argument: argument, slot: k))
                case .collected(let k):
                    collected.append(Step(argument: argument, slot: k, limit: collectLimits[position]))
                }
            }
        }
    }

    /// Adds everything `other` holds to `state` (two sessions joined by an event between them, or a hopping
    /// window's panes); `other` is left as it was. Kind by kind through each column's buffer, as folding does, so
    /// that a merge checks each column's uniqueness once, not once per accumulator.
    mutating func merge(_ other: Int32, into state: Int32) {
        let (into, from) = (Int(state), Int(other))
        start[into] = Swift.min(start[into], start[from])
        end[into] = Swift.max(end[into], end[from])
        lastTime[into] = Swift.max(lastTime[into], lastTime[from])
        firstIngestNanos[into] = min(firstIngestNanos[into], firstIngestNanos[from])
        Self.merge(&counts, plan.counts, layout.counts, into, from) { total, more, _ in total.pointee += more.pointee }
        Self.merge(&sums, plan.sums, layout.sums, into, from) { sum, more, _ in sum.pointee.merge(more.pointee) }
        Self.merge(&moments, plan.moments, layout.moments, into, from) { moments, more, _ in
            moments.pointee.merge(more.pointee)
        }
        Self.merge(&extremes, plan.extremes, layout.extremes, into, from) { extreme, more, step in
            extreme.pointee.merge(more.pointee, isMax: step.flag)
        }
        Self.merge(&ordered, plan.ordered, layout.ordered, into, from) { ordered, more, step in
            Ordered.merge(more, into: ordered, isLast: step.flag)
        }
        Self.merge(&sketches, plan.sketches, layout.sketches, into, from) { sketch, more, _ in
            DDSketch.merge(more, into: sketch)
        }
        Self.merge(&distincts, plan.distincts, layout.distincts, into, from) { distinct, more, _ in
            DistinctCounter.merge(more, into: distinct)
        }
        Self.merge(&collected, plan.collected, layout.collected, into, from) { collected, more, step in
            Collected.merge(more, into: collected, limit: step.limit)
        }
    }

    /// Merges the accumulators of one kind of state `from` into those of state `into`, `width` a state, each where
    /// it lies in its column: a kind that holds arrays can then merge without copying the one it reads, a copy that
    /// retains each array (a sketch's three, a cache miss apiece, were most of a hopping window's merge).
    private static func merge<Accumulator>(
        _ column: inout [Accumulator], _ steps: [FoldPlan.Step], _ width: Int, _ into: Int, _ from: Int,
        _ body: (UnsafeMutablePointer<Accumulator>, UnsafePointer<Accumulator>, FoldPlan.Step) -> Void
    ) {
        guard !steps.isEmpty else { return }
        column.withUnsafeMutableBufferPointer { column in
            let (target, source) = (column.baseAddress! + into * width, column.baseAddress! + from * width)
            for step in steps { body(target + step.slot, source + step.slot, step) }
        }
    }

    /// Appends the aggregations' results for `state` to `fields`, each under its output field, in the order they
    /// were written.
    func appendResults(_ state: Int32, _ aggregations: [Aggregation], to fields: inout [JSONObject.Field]) {
        let index = Int(state)
        for (aggregation, slot) in zip(aggregations, layout.slots) {
            let value: JSONValue =
                switch slot {
                case .count(let k): .int(Int64(counts[index * layout.counts + k]))
                case .sum(let k):
                    aggregation.function == .avg
                        ? sums[index * layout.sums + k].mean : sums[index * layout.sums + k].value
                case .moments(let k):
                    moments[index * layout.moments + k].standardDeviation.map { .double($0) } ?? .null
                case .extreme(let k, _): extremes[index * layout.extremes + k].value
                case .ordered(let k, _): ordered[index * layout.ordered + k].value
                case .sketch(let k):
                    sketches[index * layout.sketches + k].quantile(aggregation.parameter).map { .double($0) } ?? .null
                case .distinct(let k): .int(Int64(distincts[index * layout.distincts + k].estimate))
                case .collected(let k): .array(collected[index * layout.collected + k].items.map(\.value))
                }
            fields.append(JSONObject.Field(key: aggregation.field, value: value))
        }
    }
}
