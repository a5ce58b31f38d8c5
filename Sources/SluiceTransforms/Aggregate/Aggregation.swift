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

/// Where one aggregation keeps its state in ``WindowStates``: which column, and which of its state's slots there.
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

/// One argument's value in one event as the numeric functions and `count` read it: copying one copies bytes (a
/// `JSONValue` may hold a reference), so folding an event counts no references. `other` is any value that is not a
/// number (numeric functions then reject the event; `count` counts it).
enum Reading: Sendable {
    case null
    case int(Int64)
    case double(Double)
    case other

    init(_ value: JSONValue) {
        switch value {
        case .null: self = .null
        case .int(let number): self = .int(number)
        case .double(let number): self = .double(number)
        default: self = .other
        }
    }

    /// True for null or missing, which every function but `count()` skips.
    var isNull: Bool {
        if case .null = self { true } else { false }
    }

    /// An integer or double as a double (0 for anything else, which the caller has ruled out).
    var number: Double {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        case .null, .other: 0
        }
    }

    /// The number as written (an integer stays an integer).
    var value: JSONValue {
        switch self {
        case .int(let value): .int(value)
        case .double(let value): .double(value)
        case .null, .other: .null
        }
    }
}

/// A sum that stays exact in double precision however the values are ordered (Neumaier's compensated summation),
/// and exact in integers while every value is one and nothing overflows.
struct CompensatedSum: Sendable {
    private var sum = 0.0
    private var compensation = 0.0
    private var integer: Int64 = 0
    private var allIntegers = true
    private(set) var count = 0

    mutating func add(_ value: Reading) {
        count += 1
        if allIntegers, case .int(let whole) = value {
            let (result, overflow) = integer.addingReportingOverflow(whole)
            if overflow { allIntegers = false } else { integer = result }
        } else {
            allIntegers = false
        }
        addDouble(value.number)
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

    /// The mean of the values added, or null before any: the exact sum (an integer sum exactly, while it is one)
    /// divided once.
    var mean: JSONValue {
        guard count > 0 else { return .null }
        let total = allIntegers ? Double(integer) : sum + compensation
        return .double(total / Double(count))
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
    private var extreme = Reading.null
    private var number = 0.0

    /// The value, as written; null before any.
    var value: JSONValue { extreme.value }

    mutating func add(_ candidate: Reading, isMax: Bool) {
        let candidateNumber = candidate.number
        if case .null = extreme {
            extreme = candidate
            number = candidateNumber
        } else if isMax ? candidateNumber > number : candidateNumber < number {
            extreme = candidate
            number = candidateNumber
        }
    }

    mutating func merge(_ other: Extreme, isMax: Bool) {
        if case .null = other.extreme { return }
        add(other.extreme, isMax: isMax)
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

    /// Takes the value of the one at `other` into the one at `ordered` (another) where it is earlier (or later),
    /// reading `other` where it lies, for the reason ``DistinctCounter/merge(_:into:)`` gives.
    static func merge(_ other: UnsafePointer<Ordered>, into ordered: UnsafeMutablePointer<Ordered>, isLast: Bool) {
        precondition(UnsafePointer(ordered) != other, "A value cannot be merged into itself.")
        if other.pointee.seen { ordered.pointee.add(other.pointee.value, time: other.pointee.time, isLast: isLast) }
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

    /// Empties it, keeping its storage.
    mutating func reset() {
        items.removeAll(keepingCapacity: true)
    }

    /// Adds the values of the collection at `other` to the one at `collected` (another), reading `other` where it
    /// lies, for the reason ``DistinctCounter/merge(_:into:)`` gives.
    static func merge(_ other: UnsafePointer<Collected>, into collected: UnsafeMutablePointer<Collected>, limit: Int) {
        precondition(UnsafePointer(collected) != other, "A collection cannot be merged into itself.")
        other.pointee.items.withUnsafeBufferPointer { items in
            for item in items { collected.pointee.add(item.value, time: item.time, limit: limit) }
        }
    }
}

/// How many accumulators of each kind a state of ``WindowStates`` has, and which one each aggregation uses.
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
            // An average is a compensated sum divided at the end: folding a value then divides nothing, where
            // Welford's mean divides once per value (a division's latency was an eighth of folding an event).
            case .sum, .avg: slots.append(.sum(next(&sums)))
            case .stddev: slots.append(.moments(next(&moments)))
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
