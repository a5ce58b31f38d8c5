internal import SluiceCore

/// One tumbling or hopping window: its groups' states, in the order the groups first appeared in it.
final class OpenWindow: @unchecked Sendable {
    // @unchecked: as for WindowState, only the one AggregateTransform holding it touches it.
    let start: Int64
    let end: Int64
    var groups: [EventKey: WindowState] = [:]
    var order: [WindowState] = []
    /// The earliest ingest time of the events folded into its groups.
    var firstIngestNanos = UInt64.max

    init(start: Int64, end: Int64) {
        self.start = start
        self.end = end
    }
}

/// Folds events into one event per group and window (see ``AggregateTransformConfig``).
///
/// Event time: the watermark is the largest event time seen minus the allowed lateness, advanced event by event in
/// arrival order (so batching never changes which events are late); a window closes, in window-end order, when the
/// watermark reaches its end, and an event all of whose windows have closed is discarded under `late`. Processing
/// time: an event's time is the wall clock when it is processed, and windows close on the wall clock through the
/// transform's deadline. Every input event is either folded, late, or an error; every output event is created.
struct AggregateTransform: Transform {
    let id: String
    let log: Logger
    let window: AggregateTransformConfig.Window
    let time: AggregateTransformConfig.Time
    let groupBy: [(field: String, expression: Expression)]
    let groupExpressions: [Expression]
    let aggregations: [Aggregation]
    let layout: AccumulatorLayout
    let maxGroups: Int
    /// The distinct expressions the aggregations read, evaluated once per event, and each aggregation's index
    /// into them (`nil` for `count()`).
    let arguments: [Expression]
    let argumentIndex: [Int?]
    /// The arguments that must be numbers (or null), and the aggregation that needs each, for messages.
    let numericArguments: [Int]
    let numericNames: [String]
    /// Each aggregation's `collect` limit (0 for the others), so the hot loop reads no Aggregation.
    let collectLimits: [Int]
    /// The event-time field and the allowed lateness, kept apart from `time` so the hot path copies no enum.
    let timeField: Expression?
    let lateness: Int64
    /// Where the time, a single group field and each argument are, when they are top-level fields: read straight
    /// from the event's text, where they were in the last event (``FieldLocator``).
    var timeLocator: FieldLocator?
    var groupLocator: FieldLocator?
    var argumentLocators: [FieldLocator?]
    /// The states of the other group and argument expressions and of the time field.
    var groupStates: [ExpressionState]
    var argumentStates: [ExpressionState]
    var timeState: ExpressionState?
    var errors: EvaluationErrorLog
    var lateReports = RateLimitedReporter()

    // MARK: State

    /// Tumbling and hopping windows by end, and their ends in ascending order.
    var windows: [Int64: OpenWindow] = [:]
    /// The window the last event went to.
    var lastWindow: OpenWindow?
    var ends: [Int64] = []
    /// Session windows by group, each group's sorted by start.
    var sessions: [EventKey: [WindowState]] = [:]
    /// Open sessions by end for closing in order: (end, group's first-seen number, state). Entries go stale when a
    /// session grows or merges; a stale entry is skipped when it comes up.
    var sessionHeap = SessionHeap()
    /// When each session group was first seen, for the output order of sessions ending together.
    var firstSeen: [EventKey: Int] = [:]
    /// Open group windows.
    var open = 0
    var evicted = 0
    /// Windows with an end at or before this are closed: the event-time watermark, or the wall clock with
    /// processing time, raised further when windows are emitted early (idle flush, the group limit).
    var watermark = Int64.min
    /// The ingest time of the event being folded.
    var foldingIngestNanos = UInt64.max
    /// No later than the earliest ingest time of any event in an open window (see ``oldestHeldIngestNanos``).
    var heldFloorNanos = UInt64.max
    /// When the sessions were last scanned for it, in epoch milliseconds.
    var heldScanMillis: Int64?
    /// The wall-clock time of the last event, for the idle flush.
    var lastArrival: Int64?
    /// Scratch for the argument values of one event.
    var values: [JSONValue]

    init(config: AggregateTransformConfig, context: TransformContext) {
        id = context.id
        log = context.log
        window = config.window
        time = config.time
        groupBy = config.groupBy
        groupExpressions = config.groupBy.map(\.expression)
        aggregations = config.aggregations
        layout = AccumulatorLayout(config.aggregations)
        maxGroups = config.maxGroups
        var arguments: [Expression] = []
        argumentIndex = config.aggregations.map { aggregation in
            guard let argument = aggregation.argument else { return nil }
            if let index = arguments.firstIndex(where: { $0.source == argument.source }) { return index }
            arguments.append(argument)
            return arguments.count - 1
        }
        self.arguments = arguments
        let numeric = zip(config.aggregations, argumentIndex).compactMap { aggregation, index -> (Int, String)? in
            guard aggregation.function.isNumeric, let index else { return nil }
            return (index, "\(aggregation.function.rawValue)(\(aggregation.argument?.source ?? ""))")
        }
        numericArguments = numeric.map(\.0)
        numericNames = numeric.map(\.1)
        collectLimits = config.aggregations.map { $0.function == .collect ? Int($0.parameter) : 0 }
        if case .event(let field, let lateness, _) = config.time {
            timeLocator = FieldLocator(field.pathSteps)
            timeField = field
            self.lateness = lateness
        } else {
            timeField = nil
            lateness = 0
        }
        groupLocator = config.groupBy.count == 1 ? FieldLocator(config.groupBy[0].expression.pathSteps) : nil
        argumentLocators = arguments.map { FieldLocator($0.pathSteps) }
        groupStates = groupExpressions.map { $0.makeState() }
        argumentStates = arguments.map { $0.makeState() }
        timeState = timeField?.makeState()
        values = Array(repeating: .null, count: arguments.count)
        errors = EvaluationErrorLog(componentID: context.id, log: context.log)
    }

    var state: TransformState? { TransformState(name: "open_windows", size: open, evictedTotal: evicted) }

    var oldestHeldIngestNanos: UInt64 { heldFloorNanos }

    /// Raises the floor to the truth once windows have closed: at once for time windows, which are few, and at
    /// most once a second for sessions, which are one per key (between scans it only falls, staying safe).
    private mutating func refreshHeldFloor(now: Int64) {
        if open == 0 {
            heldFloorNanos = .max
            return
        }
        switch window {
        case .tumbling, .hopping:
            heldFloorNanos = windows.values.lazy.map(\.firstIngestNanos).min() ?? .max
        case .session:
            if let last = heldScanMillis, now - last < 1_000 { return }
            heldScanMillis = now
            heldFloorNanos = sessions.values.lazy.flatMap { $0 }.map(\.firstIngestNanos).min() ?? .max
        }
    }

    // MARK: - Transform

    mutating func process(_ events: inout [Event], _ pass: inout TransformPass) {
        var output: [Event] = []
        if case .processing = time { advanceProcessingTime(pass.nowMillis, into: &output, &pass) }
        for event in events { fold(event, into: &output, &pass) }
        if !events.isEmpty { lastArrival = pass.nowMillis }
        sessionHeap.settle()
        refreshHeldFloor(now: pass.nowMillis)
        events = output
    }

    var deadline: Int64? {
        switch time {
        case .processing:
            return earliestEnd
        case .event(_, _, let idleFlush):
            guard open > 0, let idleFlush, let lastArrival else { return nil }
            return lastArrival + idleFlush
        }
    }

    mutating func advance(_ events: inout [Event], _ pass: inout TransformPass) {
        switch time {
        case .processing:
            advanceProcessingTime(pass.nowMillis, into: &events, &pass)
        case .event(_, _, let idleFlush):
            // No event for idle_flush_secs: the open windows are emitted, and events for them arriving later are
            // late.
            guard let idleFlush, let lastArrival, pass.nowMillis >= lastArrival + idleFlush else { return }
            closeAll(partial: false, into: &events, &pass)
        }
        sessionHeap.settle()
        refreshHeldFloor(now: pass.nowMillis)
    }

    mutating func finish(_ events: inout [Event], _ pass: inout TransformPass, stopping: Bool) {
        closeAll(partial: stopping, into: &events, &pass)
        refreshHeldFloor(now: pass.nowMillis)
    }

    // MARK: - Folding

    private mutating func fold(_ event: Event, into output: inout [Event], _ pass: inout TransformPass) {
        let eventTime: Int64
        let key: EventKey
        do throws(EvaluationError) {
            eventTime = try self.eventTime(of: event, now: pass.nowMillis)
            if groupLocator != nil {
                key = .one(event.lookup(&groupLocator!) ?? .null)
            } else {
                key = try EventKey(event, groupExpressions, &groupStates)
            }
            for index in arguments.indices {
                if argumentLocators[index] != nil {
                    values[index] = event.lookup(&argumentLocators[index]!) ?? .null
                } else {
                    values[index] = try arguments[index].evaluate(event, &argumentStates[index])
                }
            }
            try checkNumbers()
        } catch {
            pass.discards[.error] += 1
            errors.report(error, in: "aggregate")
            return
        }
        foldingIngestNanos = event.ingestNanos
        switch window {
        case .tumbling(let size):
            let start = floorDivide(eventTime, size) * size
            guard start + size > watermark else { return late(eventTime, &pass) }
            add(eventTime, key, toWindow: start, end: start + size)
        case .hopping(let size, let hop):
            // The windows holding t start at k * hop for t - size < k * hop <= t; the open ones end after the
            // watermark. Late only when every one has closed.
            let last = floorDivide(eventTime, hop) * hop
            var start = last - size + hop
            guard last + size > watermark else { return late(eventTime, &pass) }
            while start <= last {
                if start + size > watermark { add(eventTime, key, toWindow: start, end: start + size) }
                start += hop
            }
        case .session(let gap):
            guard eventTime + gap > watermark else { return late(eventTime, &pass) }
            addToSession(eventTime, key, gap: gap)
        }
        pass.folded += 1
        heldFloorNanos = min(heldFloorNanos, event.ingestNanos)
        if timeField != nil {
            let candidate = eventTime &- lateness
            if candidate > watermark {
                watermark = candidate
                closeWindows(through: watermark, partial: false, into: &output, &pass)
            }
        }
        if open > maxGroups { evictOldest(into: &output, &pass) }
    }

    private mutating func late(_ eventTime: Int64, _ pass: inout TransformPass) {
        pass.discards[.late] += 1
        lateReports.report(to: log) { [id, watermark] in
            "\(id): an event at \(RFC3339.format(epochMillis: eventTime)) is later than the allowed lateness "
                + "(its windows closed at \(RFC3339.format(epochMillis: watermark))); counted under late"
        } summary: { [id] in
            "\(id): \($0) more late events; see late in the metrics"
        }
    }

    private mutating func eventTime(of event: Event, now: Int64) throws(EvaluationError) -> Int64 {
        // The common case, an RFC 3339 string or epoch milliseconds in the event's text, without making a value.
        if timeLocator != nil, let millis = event.epochMillis(&timeLocator!) { return millis }
        guard let field = timeField else { return max(now, watermark) }
        switch try field.evaluate(event, &timeState!) {
        case .int(let millis): return millis
        case .double(let millis) where millis.isFinite && abs(millis) < 9e15: return Int64(millis.rounded(.down))
        case .string(let text):
            guard let millis = RFC3339.parse(text) else {
                throw EvaluationError("the time field \(field.source) is not an RFC 3339 time: '\(text.prefix(40))'")
            }
            return millis
        case .null:
            throw EvaluationError("the event has no time field \(field.source)")
        case let other:
            throw EvaluationError(
                "the time field \(field.source) must be RFC 3339 text or epoch milliseconds, found "
                    + JSONWriter.string(other).prefix(40))
        }
    }

    /// A numeric function met something other than a number or null: the event is not folded anywhere.
    private func checkNumbers() throws(EvaluationError) {
        for position in numericArguments.indices {
            switch values[numericArguments[position]] {
            case .int, .null: continue
            case .double(let number) where number.isFinite: continue
            case let other:
                throw EvaluationError(
                    "\(numericNames[position]) needs numbers, found " + JSONWriter.string(other).prefix(40))
            }
        }
    }

    private mutating func add(_ eventTime: Int64, _ key: EventKey, toWindow start: Int64, end: Int64) {
        let open: OpenWindow
        if let last = lastWindow, last.end == end {
            // Most events fall in the window the previous one did.
            open = last
        } else if let existing = windows[end] {
            open = existing
            lastWindow = existing
        } else {
            open = OpenWindow(start: start, end: end)
            windows[end] = open
            lastWindow = open
            let position = ends.firstIndex { $0 > end } ?? ends.count
            ends.insert(end, at: position)
        }
        let state: WindowState
        if let existing = open.groups[key] {
            state = existing
        } else {
            state = WindowState(group: key.values, start: start, end: end, layout: layout)
            open.groups[key] = state
            open.order.append(state)
            self.open += 1
        }
        open.firstIngestNanos = min(open.firstIngestNanos, foldingIngestNanos)
        accumulate(into: state, eventTime)
    }

    private mutating func addToSession(_ eventTime: Int64, _ key: EventKey, gap: Int64) {
        if firstSeen[key] == nil { firstSeen[key] = firstSeen.count }
        // Taken out of the dictionary while it changes, so that the array is not copied.
        var list = sessions.removeValue(forKey: key) ?? []
        // The sessions this event falls within the gap of: it joins them (and joins them together).
        let touching = list.indices.filter { eventTime >= list[$0].start - gap && eventTime < list[$0].end }
        let state: WindowState
        if let first = touching.first {
            state = list[first]
            for index in touching.dropFirst().reversed() {
                state.merge(list[index], aggregations, layout.slots)
                list[index].closed = true
                list.remove(at: index)
                open -= 1
            }
            state.start = min(state.start, eventTime)
            state.lastTime = max(state.lastTime, eventTime)
            state.end = state.lastTime + gap
        } else {
            state = WindowState(group: key.values, start: eventTime, end: eventTime + gap, layout: layout)
            state.lastTime = eventTime
            let position = list.firstIndex { $0.start > eventTime } ?? list.count
            list.insert(state, at: position)
            open += 1
            sessionHeap.push(end: state.end, order: firstSeen[key]!, state: state, key: key)
        }
        sessions[key] = list
        accumulate(into: state, eventTime)
    }

    /// Folds the current event's values into `state`.
    private func accumulate(into state: WindowState, _ eventTime: Int64) {
        state.events += 1
        state.firstIngestNanos = min(state.firstIngestNanos, foldingIngestNanos)
        for (position, slot) in layout.slots.enumerated() {
            let value = argumentIndex[position].map { values[$0] }
            if let value, value == .null {
                continue
            }
            switch slot {
            case .count(let index): state.counts[index] += 1
            case .sum(let index): state.sums[index].add(value!, value!.number)
            case .moments(let index): state.moments[index].add(value!.number)
            case .extreme(let index, let isMax): state.extremes[index].add(value!, value!.number, isMax: isMax)
            case .ordered(let index, let isLast): state.ordered[index].add(value!, time: eventTime, isLast: isLast)
            case .sketch(let index): state.sketches[index].add(value!.number)
            case .distinct(let index): state.distincts[index].add(hash: StableHash.hash(value!))
            case .collected(let index):
                state.collected[index].add(value!, time: eventTime, limit: collectLimits[position])
            }
        }
    }

    // MARK: - Closing

    /// The end of the window that closes first, if any is open.
    private var earliestEnd: Int64? {
        switch window {
        case .tumbling, .hopping: return ends.first
        case .session: return sessionHeap.earliestOpenEnd
        }
    }

    private mutating func advanceProcessingTime(_ now: Int64, into output: inout [Event], _ pass: inout TransformPass) {
        guard now > watermark else { return }
        watermark = now
        closeWindows(through: now, partial: false, into: &output, &pass)
    }

    /// Emits every window ending at or before `limit`, in window-end order.
    private mutating func closeWindows(
        through limit: Int64, partial: Bool, into output: inout [Event], _ pass: inout TransformPass
    ) {
        switch window {
        case .tumbling, .hopping:
            while let end = ends.first, end <= limit {
                ends.removeFirst()
                let closing = windows.removeValue(forKey: end)!
                if lastWindow === closing { lastWindow = nil }
                // Every group of a window shares its bounds: formatted once.
                let bounds = (
                    JSONValue.string(RFC3339.format(epochMillis: closing.start)),
                    JSONValue.string(RFC3339.format(epochMillis: end))
                )
                for state in closing.order { emit(state, bounds: bounds, partial: partial, into: &output, &pass) }
                open -= closing.order.count
            }
        case .session:
            while let (state, key) = sessionHeap.popOpen(endingBy: limit) {
                sessions[key]?.removeAll { $0 === state }
                if sessions[key]?.isEmpty == true { sessions[key] = nil }
                let bounds = (
                    JSONValue.string(RFC3339.format(epochMillis: state.start)),
                    JSONValue.string(RFC3339.format(epochMillis: state.end))
                )
                emit(state, bounds: bounds, partial: partial, into: &output, &pass)
                open -= 1
            }
        }
    }

    /// Emits every open window, and closes what they covered.
    private mutating func closeAll(partial: Bool, into output: inout [Event], _ pass: inout TransformPass) {
        guard let last = latestEnd else { return }
        closeWindows(through: last, partial: partial, into: &output, &pass)
        watermark = max(watermark, last)
    }

    private var latestEnd: Int64? {
        switch window {
        case .tumbling, .hopping: return ends.last
        case .session: return sessions.values.lazy.flatMap { $0 }.map(\.end).max()
        }
    }

    /// Over `max_groups`: the window that would close first is emitted now, marked partial, and counted.
    private mutating func evictOldest(into output: inout [Event], _ pass: inout TransformPass) {
        guard let end = earliestEnd else { return }
        let before = open
        closeWindows(through: end, partial: true, into: &output, &pass)
        evicted += before - open
        watermark = max(watermark, end)
    }

    /// Appends the event for `state`, whose window's bounds are `bounds` as text.
    private func emit(
        _ state: WindowState, bounds: (start: JSONValue, end: JSONValue), partial: Bool, into output: inout [Event],
        _ pass: inout TransformPass
    ) {
        var object = JSONObject()
        for (group, value) in zip(groupBy, state.group) { object[group.field] = value }
        object["window_start"] = bounds.start
        object["window_end"] = bounds.end
        for (aggregation, value) in zip(aggregations, state.results(aggregations, layout.slots)) {
            object[aggregation.field] = value
        }
        if partial { object["partial"] = true }
        output.append(Event(.object(object), ingestNanos: min(state.firstIngestNanos, MonotonicClock.nanos())))
        pass.created += 1
    }
}

/// A min-heap of open sessions by end, then by their group's first-seen number: one entry per session, pushed when
/// it opens. A session that grew since is pushed again with its new end when its entry comes up; one that was
/// merged into another is dropped then. So the heap holds about one entry per open session.
struct SessionHeap: Sendable {
    private var entries: [(end: Int64, order: Int, state: WindowState, key: EventKey)] = []

    /// Fixes the top entry (re-pushing a session that grew, dropping one merged away), so that ``earliestOpenEnd``
    /// is the end of the session that closes first.
    mutating func settle() {
        while let top = entries.first {
            if top.state.closed {
                pop()
            } else if top.state.end != top.end {
                pop()
                push(end: top.state.end, order: top.order, state: top.state, key: top.key)
            } else {
                return
            }
        }
    }

    mutating func push(end: Int64, order: Int, state: WindowState, key: EventKey) {
        entries.append((end, order, state, key))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.less(entries[child], entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// The end of the session that closes first, once ``settle()`` has run.
    var earliestOpenEnd: Int64? { entries.first?.end }

    /// Removes and returns the first open session whose end is at most `limit`.
    mutating func popOpen(endingBy limit: Int64) -> (WindowState, EventKey)? {
        settle()
        guard let top = entries.first, top.end <= limit else { return nil }
        pop()
        top.state.closed = true
        return (top.state, top.key)
    }

    private mutating func pop() {
        entries.swapAt(0, entries.count - 1)
        entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count, Self.less(entries[left], entries[smallest]) { smallest = left }
            if right < entries.count, Self.less(entries[right], entries[smallest]) { smallest = right }
            guard smallest != parent else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }

    private static func less(
        _ a: (end: Int64, order: Int, state: WindowState, key: EventKey),
        _ b: (end: Int64, order: Int, state: WindowState, key: EventKey)
    ) -> Bool {
        a.end != b.end ? a.end < b.end : a.order < b.order
    }
}

/// Division rounding towards minus infinity, so that windows before 1970 align too.
func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
    let quotient = value / divisor
    return (value % divisor != 0 && (value < 0) != (divisor < 0)) ? quotient - 1 : quotient
}

extension JSONValue {
    /// An integer or double as a double (the caller has checked it is one).
    fileprivate var number: Double {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: 0
        }
    }
}
