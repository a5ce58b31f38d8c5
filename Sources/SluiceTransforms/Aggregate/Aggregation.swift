internal import SluiceCore

#if canImport(Glibc)
    internal import Glibc
#endif

/// One aggregation of an `aggregate`: an output field and the function that fills it, as written in
/// `aggregations:` (`avg_temp: avg(.temperature)`).
struct Aggregation: Sendable {
    /// The functions, by the name users write.
    enum Function: String, CaseIterable, Sendable {
        case count, sum, avg, min, max, first, last, percentile, distinct_count, stddev, collect

        /// True when the function needs numbers.
        var isNumeric: Bool { [.sum, .avg, .min, .max, .percentile, .stddev].contains(self) }
    }

    /// The output field.
    let field: String
    let function: Function
    /// The expression whose values are aggregated; `nil` only for `count()`.
    let argument: Expression?
    /// `percentile`'s quantile (0...1), `collect`'s limit.
    let parameter: Double
}

/// Where one aggregation keeps its state in a ``WindowState``: which array, and which slot of it.
enum AccumulatorSlot: Sendable {
    case count(Int)
    case sum(Int)
    case moments(Int)
    case extreme(Int, isMax: Bool)
    case ordered(Int, isLast: Bool)
    case sketch(Int)
    case distinct(Int)
    case collected(Int)
}

/// A sum that stays exact in double precision however the values are ordered (Neumaier's compensated summation),
/// and exact in integers while every value is one and nothing overflows.
struct CompensatedSum: Sendable {
    private var sum = 0.0
    private var compensation = 0.0
    private var integer: Int64 = 0
    private var allIntegers = true
    private(set) var count = 0

    mutating func add(_ value: JSONValue, _ number: Double) {
        count += 1
        if allIntegers, case .int(let whole) = value {
            let (result, overflow) = integer.addingReportingOverflow(whole)
            if overflow { allIntegers = false } else { integer = result }
        } else {
            allIntegers = false
        }
        addDouble(number)
    }

    private mutating func addDouble(_ number: Double) {
        let total = sum + number
        if abs(sum) >= abs(number) {
            compensation += (sum - total) + number
        } else {
            compensation += (number - total) + sum
        }
        sum = total
    }

    mutating func merge(_ other: CompensatedSum) {
        count += other.count
        if allIntegers, other.allIntegers {
            let (result, overflow) = integer.addingReportingOverflow(other.integer)
            if overflow { allIntegers = false } else { integer = result }
        } else {
            allIntegers = false
        }
        addDouble(other.sum)
        addDouble(other.compensation)
    }

    var value: JSONValue {
        guard count > 0 else { return .null }
        return allIntegers ? .int(integer) : .double(sum + compensation)
    }
}

/// Count, mean and sum of squared deviations by Welford's online algorithm, merged with Chan's formula: stable
/// where summing squares is not.
struct Moments: Sendable {
    private(set) var count = 0
    private(set) var mean = 0.0
    private var squares = 0.0

    mutating func add(_ value: Double) {
        count += 1
        let delta = value - mean
        mean += delta / Double(count)
        squares += delta * (value - mean)
    }

    mutating func merge(_ other: Moments) {
        guard other.count > 0 else { return }
        guard count > 0 else {
            self = other
            return
        }
        let total = count + other.count
        let delta = other.mean - mean
        mean += delta * Double(other.count) / Double(total)
        squares += other.squares + delta * delta * Double(count) * Double(other.count) / Double(total)
        count = total
    }

    /// The sample standard deviation (n − 1), or `nil` below two values.
    var standardDeviation: Double? {
        count >= 2 ? (squares / Double(count - 1)).squareRoot() : nil
    }
}

/// The smallest or largest number seen, kept as written (an integer stays an integer).
struct Extreme: Sendable {
    private(set) var value: JSONValue = .null
    private var number = 0.0

    mutating func add(_ candidate: JSONValue, _ candidateNumber: Double, isMax: Bool) {
        if value == .null || (isMax ? candidateNumber > number : candidateNumber < number) {
            value = candidate
            number = candidateNumber
        }
    }

    mutating func merge(_ other: Extreme, isMax: Bool) {
        if other.value != .null { add(other.value, other.number, isMax: isMax) }
    }
}

/// The value of the earliest (or latest) event by event time; among equal times, the first (or last) to arrive.
struct Ordered: Sendable {
    private(set) var value: JSONValue = .null
    private var time = Int64.min
    private var seen = false

    mutating func add(_ candidate: JSONValue, time candidateTime: Int64, isLast: Bool) {
        if !seen || (isLast ? candidateTime >= time : candidateTime < time) {
            value = candidate
            time = candidateTime
            seen = true
        }
    }

    mutating func merge(_ other: Ordered, isLast: Bool) {
        if other.seen { add(other.value, time: other.time, isLast: isLast) }
    }
}

/// The first `limit` values by event time (then arrival).
struct Collected: Sendable {
    private(set) var items: [(time: Int64, value: JSONValue)] = []

    mutating func add(_ value: JSONValue, time: Int64, limit: Int) {
        guard items.count < limit || time < items[items.count - 1].time else { return }
        // Values mostly arrive in time order: insert from the end.
        var position = items.count
        while position > 0, items[position - 1].time > time { position -= 1 }
        items.insert((time, value), at: position)
        if items.count > limit { items.removeLast() }
    }

    mutating func merge(_ other: Collected, limit: Int) {
        for item in other.items { add(item.value, time: item.time, limit: limit) }
    }
}

/// The state of every aggregation for one group in one window. A class, made once per group and window, so that
/// folding an event changes its arrays in place.
final class WindowState: @unchecked Sendable {
    // @unchecked: created, changed and read only by the one AggregateTransform that holds it, which runs in one task
    // at a time (the runner moves a transform into its task and never copies it).
    /// The group's values, in `group_by` order.
    let group: [JSONValue]
    /// The window's bounds in epoch milliseconds; a session's grow as it does.
    var start: Int64
    var end: Int64
    /// The latest event time folded into a session (its end is this plus the gap).
    var lastTime: Int64
    /// A session that was emitted, or merged into another: its entries in the session heap are stale.
    var closed = false
    /// Events folded.
    var events = 0
    /// The earliest ingest time among them: the emitted event carries it, so they stay held until it is written.
    var firstIngestNanos = UInt64.max
    var counts: [Int]
    var sums: [CompensatedSum]
    var moments: [Moments]
    var extremes: [Extreme]
    var ordered: [Ordered]
    var sketches: [DDSketch]
    var distincts: [DistinctCounter]
    var collected: [Collected]

    init(group: [JSONValue], start: Int64, end: Int64, layout: AccumulatorLayout) {
        self.group = group
        self.start = start
        self.end = end
        lastTime = start
        counts = Array(repeating: 0, count: layout.counts)
        sums = Array(repeating: CompensatedSum(), count: layout.sums)
        moments = Array(repeating: Moments(), count: layout.moments)
        extremes = Array(repeating: Extreme(), count: layout.extremes)
        ordered = Array(repeating: Ordered(), count: layout.ordered)
        sketches = Array(repeating: DDSketch(), count: layout.sketches)
        distincts = Array(repeating: DistinctCounter(), count: layout.distincts)
        collected = Array(repeating: Collected(), count: layout.collected)
    }

    /// Adds everything `other` holds (two sessions joined by an event between them).
    func merge(_ other: WindowState, _ aggregations: [Aggregation], _ slots: [AccumulatorSlot]) {
        start = Swift.min(start, other.start)
        end = Swift.max(end, other.end)
        lastTime = Swift.max(lastTime, other.lastTime)
        events += other.events
        firstIngestNanos = min(firstIngestNanos, other.firstIngestNanos)
        for (aggregation, slot) in zip(aggregations, slots) {
            switch slot {
            case .count(let index): counts[index] += other.counts[index]
            case .sum(let index): sums[index].merge(other.sums[index])
            case .moments(let index): moments[index].merge(other.moments[index])
            case .extreme(let index, let isMax): extremes[index].merge(other.extremes[index], isMax: isMax)
            case .ordered(let index, let isLast): ordered[index].merge(other.ordered[index], isLast: isLast)
            case .sketch(let index): sketches[index].merge(other.sketches[index])
            case .distinct(let index): distincts[index].merge(other.distincts[index])
            case .collected(let index):
                collected[index].merge(other.collected[index], limit: Int(aggregation.parameter))
            }
        }
    }
}

/// How many accumulators of each kind a ``WindowState`` holds, and which one each aggregation uses.
struct AccumulatorLayout: Sendable {
    var counts = 0
    var sums = 0
    var moments = 0
    var extremes = 0
    var ordered = 0
    var sketches = 0
    var distincts = 0
    var collected = 0
    private(set) var slots: [AccumulatorSlot] = []

    init(_ aggregations: [Aggregation]) {
        for aggregation in aggregations {
            func next(_ counter: inout Int) -> Int {
                defer { counter += 1 }
                return counter
            }
            switch aggregation.function {
            case .count: slots.append(.count(next(&counts)))
            case .sum: slots.append(.sum(next(&sums)))
            case .avg, .stddev: slots.append(.moments(next(&moments)))
            case .min: slots.append(.extreme(next(&extremes), isMax: false))
            case .max: slots.append(.extreme(next(&extremes), isMax: true))
            case .first: slots.append(.ordered(next(&ordered), isLast: false))
            case .last: slots.append(.ordered(next(&ordered), isLast: true))
            case .percentile: slots.append(.sketch(next(&sketches)))
            case .distinct_count: slots.append(.distinct(next(&distincts)))
            case .collect: slots.append(.collected(next(&collected)))
            }
        }
    }
}

extension WindowState {
    /// The aggregations' results, in the order they were written.
    func results(_ aggregations: [Aggregation], _ slots: [AccumulatorSlot]) -> [JSONValue] {
        zip(aggregations, slots).map { aggregation, slot in
            switch slot {
            case .count(let index): .int(Int64(counts[index]))
            case .sum(let index): sums[index].value
            case .moments(let index):
                aggregation.function == .avg
                    ? (moments[index].count > 0 ? .double(moments[index].mean) : .null)
                    : moments[index].standardDeviation.map { .double($0) } ?? .null
            case .extreme(let index, _): extremes[index].value
            case .ordered(let index, _): ordered[index].value
            case .sketch(let index): sketches[index].quantile(aggregation.parameter).map { .double($0) } ?? .null
            case .distinct(let index): .int(Int64(distincts[index].estimate))
            case .collected(let index): .array(collected[index].items.map(\.value))
            }
        }
    }
}
