internal import SluiceCore

/// One tumbling window, or one pane of hopping windows (see ``AggregateTransform``): its bounds and its groups'
/// states, in the order the groups first appeared in it.
struct TimeWindow: Sendable {
    let start: Int64
    let end: Int64
    var states: [Int32] = []
}

/// Folds events into one event per group and window (see ``AggregateTransformConfig``).
///
/// Event time: the watermark is the largest event time seen minus the allowed lateness, advanced event by event in
/// arrival order (so batching never changes which events are late); a window closes, in window-end order, when the
/// watermark reaches its end, and an event all of whose windows have closed is discarded under `late`. Processing
/// time: an event's time is the wall clock when it is processed, and windows close on the wall clock through the
/// transform's deadline. Every input event is either folded, late, or an error; every output event is created.
///
/// Hopping windows are kept as panes, tumbling windows `hop_secs` long: an event folds into the one pane that holds it,
/// and when a hopping window closes, each group's panes within it are merged into its result (every function
/// merges exactly: panes cover disjoint times, so `first`, `last` and `collect` keep their order). An event then costs
/// one fold whatever `size_secs / hop_secs` is, and a group holds one state per hop it had events in.
///
/// An event's group is found by the fingerprint of its group values' text (``Groups``), and the state it folds into
/// is the one its group's last event went to, most of the time; the states themselves are columns of plain values
/// (``WindowStates``), so folding allocates nothing and counts no references.
struct AggregateTransform: Transform {
    let id: String
    let log: Logger
    let window: AggregateTransformConfig.Window
    let time: AggregateTransformConfig.Time
    let groupFields: [String]
    let groupExpressions: [Expression]
    let aggregations: [Aggregation]
    let maxGroups: Int
    /// The distinct expressions the aggregations read, evaluated once per event, and each aggregation's index
    /// into them (`nil` for `count()`).
    let arguments: [Expression]
    let argumentIndex: [Int?]
    /// The arguments that must be numbers (or null), and the aggregation that needs each, for messages.
    let numericArguments: [Int]
    let numericNames: [String]
    /// The arguments whose values a function keeps (`first`, `last`, `collect`, `distinct_count`); the others are
    /// only read as numbers (or counted).
    let keepsValue: [Bool]
    /// The event-time field and the allowed lateness, kept apart from `time` so the hot path copies no enum.
    let timeField: Expression?
    let lateness: Int64
    /// Where the time and each argument are, when they are top-level fields: read straight from the event's text,
    /// where they were in the last event (``FieldLocator``).
    var timeLocator: FieldLocator?
    var argumentLocators: [FieldLocator?]
    /// The group key's fingerprint, read from the event's text.
    var groupKeys: KeyReader
    /// The states of the group, argument and time expressions.
    var groupStates: [ExpressionState]
    var argumentStates: [ExpressionState]
    var timeState: ExpressionState?
    var errors: EvaluationErrorLog
    var lateReports = RateLimitedReporter()
    var overflowReports = RateLimitedReporter()

    // MARK: State

    var groups: Groups
    var states: WindowStates
    /// Tumbling windows, or hopping windows' panes, in ascending order of end (each group's states in them are in
    /// ``Groups``).
    var windows: [TimeWindow] = []
    /// Hopping windows ending at or before this have closed (emitted, or closed with no pane in them).
    var closedThrough = Int64.min
    /// Scratch for emitting a hopping window: each group's state in it (a pane's, or the panes' merged), and the
    /// opening of its first pane there; and where in that list each group number is (-1: not in the window).
    var windowGroups: [(first: Int, state: Int32, merged: Bool)] = []
    var windowGroupIndex: [Int] = []
    /// Open sessions by end for closing in order. Entries go stale when a session grows or merges; a stale entry is
    /// skipped when it comes up.
    var sessionHeap = SessionHeap()
    /// Open group windows (with hopping windows, counted from each group's panes: see ``windowsOpened(by:of:)``).
    var open = 0
    var evicted = 0
    /// Windows with an end at or before this are closed: the event-time watermark, or the wall clock with
    /// processing time, raised further when windows are emitted early (idle flush, the group limit).
    var watermark = Int64.min
    /// No later than the earliest ingest time of any event in an open window (see ``oldestHeldIngestNanos``).
    var heldFloorNanos = UInt64.max
    /// True when a state closed since the floor was last computed from the states.
    var closedSinceFloor = false
    /// When the sessions were last scanned for it, in epoch milliseconds.
    var heldScanMillis: Int64?
    /// The bounds of the tumbling window the last event fell in, so that the next one in it needs no division.
    var lastStart = Int64.min
    var lastEnd = Int64.min
    /// The wall-clock time of the last event, for the idle flush.
    var lastArrival: Int64?
    /// Scratch for one event: its arguments' readings, their values where kept (or not a number, for the
    /// message), and the group values of a new group.
    var readings: [Reading]
    var values: [JSONValue]
    var newGroupValues: [JSONValue] = []

    init(config: AggregateTransformConfig, context: TransformContext) {
        id = context.id
        log = context.log
        window = config.window
        time = config.time
        groupFields = config.groupBy.map(\.field)
        groupExpressions = config.groupBy.map(\.expression)
        aggregations = config.aggregations
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
        let collectLimits = config.aggregations.map { $0.function == .collect ? Int($0.parameter) : 0 }
        let indexes = argumentIndex
        keepsValue = arguments.indices.map { argument in
            zip(config.aggregations, indexes).contains { aggregation, index in
                index == argument && [.first, .last, .collect, .distinct_count].contains(aggregation.function)
            }
        }
        if case .event(let field, let lateness, _) = config.time {
            timeLocator = FieldLocator(field.pathSteps)
            timeField = field
            self.lateness = lateness
        } else {
            timeField = nil
            lateness = 0
        }
        argumentLocators = arguments.map { FieldLocator($0.pathSteps) }
        groupKeys = KeyReader(groupExpressions)
        groupStates = groupExpressions.map { $0.makeState() }
        argumentStates = arguments.map { $0.makeState() }
        timeState = timeField?.makeState()
        readings = Array(repeating: .null, count: arguments.count)
        values = Array(repeating: .null, count: arguments.count)
        errors = EvaluationErrorLog(componentID: context.id, log: context.log)
        // Sessions close one by one, with no round of closing a window after which idle groups could go.
        let sessions = if case .session = config.window { true } else { false }
        groups = Groups(width: config.groupBy.count, keepsIdle: !sessions)
        states = WindowStates(
            layout: AccumulatorLayout(config.aggregations), argumentIndex: argumentIndex, collectLimits: collectLimits)
    }

    var state: TransformState? { TransformState(name: "open_windows", size: open, evictedTotal: evicted) }

    /// With hopping windows an event belongs to `size / hop` windows, and past `max_groups` each one it opens emits
    /// another early: a batch of them at once could emit a thousand times that (a 1 h window every second, 3.6
    /// million events from one batch). In parts, one pass emits at most about a batch beyond what the limit holds.
    var maxEventsPerPass: Int? {
        guard case .hopping(let size, let hop) = window, size > hop else { return nil }
        return max(1, EventBuffer.batchEvents / Int(size / hop))
    }

    var oldestHeldIngestNanos: UInt64 { heldFloorNanos }

    /// Raises the floor to the truth once states have closed (between closes it only falls, as events fold, and
    /// stays exact): at once for time windows, which close together and seldom, and at most once a second for
    /// sessions, which close one by one (between scans it stays lower than the truth: safe).
    private mutating func refreshHeldFloor(now: Int64) {
        if open == 0 {
            heldFloorNanos = .max
            closedSinceFloor = false
            return
        }
        guard closedSinceFloor else { return }
        if case .session = window {
            if let last = heldScanMillis, now - last < 1_000 { return }
            heldScanMillis = now
        }
        heldFloorNanos = states.earliestIngestNanos
        closedSinceFloor = false
    }

    // MARK: - Transform

    mutating func process(_ events: inout [Event], _ pass: inout TransformPass) {
        var output: [Event] = []
        if case .processing = time { advanceProcessingTime(pass.nowMillis, into: &output, &pass) }
        events.forEachInPlace { fold($0, into: &output, &pass) }
        if !events.isEmpty { lastArrival = pass.nowMillis }
        sessionHeap.settle(states)
        refreshHeldFloor(now: pass.nowMillis)
        // Every event was folded (or discarded): their text buffers go back to the decoders.
        TextRecycler.shared.recycle(&events)
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
        sessionHeap.settle(states)
        refreshHeldFloor(now: pass.nowMillis)
    }

    mutating func finish(_ events: inout [Event], _ pass: inout TransformPass, stopping: Bool) {
        closeAll(partial: stopping, into: &events, &pass)
        refreshHeldFloor(now: pass.nowMillis)
    }

    // MARK: - Folding

    private mutating func fold(_ event: borrowing Event, into output: inout [Event], _ pass: inout TransformPass) {
        let eventTime: Int64
        let key: KeyFingerprint
        let known: Int32?
        do throws(EvaluationError) {
            eventTime = try self.eventTime(of: event, now: pass.nowMillis)
            key = try groupKeys.read(event)
            known = groups.number(of: key)
            if known == nil {
                newGroupValues.removeAll(keepingCapacity: true)
                for index in groupExpressions.indices {
                    newGroupValues.append(try groupExpressions[index].evaluate(event, &groupStates[index]))
                }
            }
            for index in arguments.indices { try read(argument: index, of: event) }
            try Self.checkNumbers(readings, values, numericArguments, numericNames)
        } catch {
            pass.discards[.error] += 1
            errors.report(error, in: "aggregate")
            return
        }
        // A new group is added only once the event is known to fold somewhere, so that every group held has a
        // state.
        switch window {
        case .tumbling(let size), .hopping(let size, hop: _):
            // A tumbling window, or the pane of hopping windows holding the event: `hop` long, in every window that
            // starts at most `size - hop` before it. Late only when the last of those windows has closed.
            let length = if case .hopping(_, let hop) = window { hop } else { size }
            if eventTime < lastStart || eventTime >= lastEnd {
                lastStart = floorDivide(eventTime, length) * length
                lastEnd = lastStart + length
            }
            let start = lastStart
            guard start + size > watermark else { return late(eventTime, &pass) }
            let group = known ?? groups.add(key, newGroupValues)
            var after = 0
            add(eventTime, event.ingestNanos, group, toWindow: start, end: start + length, after: &after)
        case .session(let gap):
            guard eventTime + gap > watermark else { return late(eventTime, &pass) }
            let group = known ?? groups.add(key, newGroupValues)
            addToSession(eventTime, event.ingestNanos, group, gap: gap)
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
        // A hopping event may have opened several windows: as many go as it takes.
        while open > maxGroups, evictOldest(into: &output, &pass) {}
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

    private mutating func eventTime(of event: borrowing Event, now: Int64) throws(EvaluationError) -> Int64 {
        // The field is bound only where it is used: binding it takes a reference, a retain and a release per event.
        guard timeField != nil else { return max(now, watermark) }
        // The common case, an RFC 3339 string or epoch milliseconds in the event's text, without making a value.
        let millis: Int64
        if timeLocator != nil, let fromText = event.epochMillis(&timeLocator!) {
            millis = fromText
        } else {
            millis = try eventTime(evaluating: timeField!, of: event)
        }
        guard RFC3339.writableMillis.contains(millis) else {
            throw EvaluationError(
                "the time field \(timeField!.source) is \(millis) ms from the epoch, outside the years 0000 to 9999 "
                    + "that window bounds are written in")
        }
        return millis
    }

    private mutating func eventTime(evaluating field: Expression, of event: borrowing Event) throws(EvaluationError)
        -> Int64
    {
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

    /// Reads argument `index` of `event` into ``readings`` (and ``values`` where its value is kept or it is not a
    /// number): a number straight from the event's text where it is one.
    private mutating func read(argument index: Int, of event: borrowing Event) throws(EvaluationError) {
        if !keepsValue[index], argumentLocators[index] != nil, let scalar = event.scalar(&argumentLocators[index]!) {
            switch scalar {
            case .int(let number): readings[index] = .int(number)
            case .double(let number): readings[index] = .double(number)
            case .bool(let flag):
                readings[index] = .other
                values[index] = .bool(flag)
            }
            return
        }
        let value: JSONValue
        if argumentLocators[index] != nil {
            value = event.lookup(&argumentLocators[index]!) ?? .null
        } else {
            value = try arguments[index].evaluate(event, &argumentStates[index])
        }
        readings[index] = Reading(value)
        if keepsValue[index] {
            values[index] = value
        } else if case .other = readings[index] {
            values[index] = value
        }
    }

    /// A numeric function met something other than a number or null: the event is not folded anywhere. Static, as a
    /// method of the transform called while it folds would be given a copy of the whole transform (some 900 bytes)
    /// for every event.
    private static func checkNumbers(
        _ readings: [Reading], _ values: [JSONValue], _ numericArguments: [Int], _ numericNames: [String]
    ) throws(EvaluationError) {
        for position in numericArguments.indices {
            let argument = numericArguments[position]
            switch readings[argument] {
            case .int, .null: continue
            case .double(let number) where number.isFinite: continue
            case .double(let number):
                throw EvaluationError("\(numericNames[position]) needs finite numbers, found \(number)")
            case .other:
                throw EvaluationError(
                    "\(numericNames[position]) needs numbers, found " + JSONWriter.string(values[argument]).prefix(40))
            }
        }
    }

    /// Folds the current event into `group`'s state in the window (or pane) `start..<end`, opening either as
    /// needed. `after` is where in the group's list of states the search starts (and wraps around), and is left
    /// after the state found or opened.
    private mutating func add(
        _ eventTime: Int64, _ ingestNanos: UInt64, _ group: Int32, toWindow start: Int64, end: Int64,
        after: inout Int
    ) {
        let state: Int32
        if groups.lastEnd[Int(group)] == end {
            state = groups.lastState[Int(group)]
        } else {
            if let position = stateIndex(of: group, endingAt: end, from: after) {
                state = groups.states[Int(group)][position]
                after = position + 1
            } else {
                open += windowsOpened(by: start, of: group)
                state = states.open(group: group, start: start, end: end)
                groups.opened(in: group)
                groups.states[Int(group)].append(state)
                after = groups.states[Int(group)].count
                windows[windowIndex(start: start, end: end)].states.append(state)
            }
            groups.lastEnd[Int(group)] = end
            groups.lastState[Int(group)] = state
        }
        states.fold(state, readings, values, time: eventTime, ingestNanos: ingestNanos)
    }

    /// How many windows a new state of `group` starting at `start` opens for the group: 1 but for hopping windows,
    /// where a new pane opens those of the windows holding it (ending `hop` to `size` after it) that have not closed
    /// and hold none of the group's other panes. Those panes' windows are runs of the same length, so the ones that
    /// overlap the new pane's are those of its nearest neighbours before and after.
    private func windowsOpened(by start: Int64, of group: Int32) -> Int {
        guard case .hopping(let size, let hop) = window else { return 1 }
        // Windows end on multiples of `hop`: those ending after `low`, up to `high`, are new.
        var low = max(start, lastClosedEnd(hop: hop))
        var high = start + size
        for state in groups.states[Int(group)] {
            let other = states.start[Int(state)]
            if other < start { low = max(low, other + size) } else { high = min(high, other) }
        }
        return high > low ? Int((high - low) / hop) : 0
    }

    /// Where in `group`'s list of states the one of the window ending at `end` is, searching from `start` to the end
    /// of the list and then from its beginning.
    private func stateIndex(of group: Int32, endingAt end: Int64, from start: Int) -> Int? {
        groups.states[Int(group)].withUnsafeBufferPointer { list in
            let start = min(start, list.count)
            for position in start..<list.count where states.end[Int(list[position])] == end { return position }
            for position in 0..<start where states.end[Int(list[position])] == end { return position }
            return nil
        }
    }

    /// The index in ``windows`` of the window ending at `end`, added if it is not open.
    private mutating func windowIndex(start: Int64, end: Int64) -> Int {
        var low = 0
        var high = windows.count
        while low < high {
            let middle = (low + high) / 2
            if windows[middle].end < end { low = middle + 1 } else { high = middle }
        }
        if low == windows.count || windows[low].end != end {
            windows.insert(TimeWindow(start: start, end: end), at: low)
        }
        return low
    }

    private mutating func addToSession(_ eventTime: Int64, _ ingestNanos: UInt64, _ group: Int32, gap: Int64) {
        // Taken out of the groups while it changes, so that the array is not copied.
        var list = groups.states[Int(group)]
        groups.states[Int(group)] = []
        // The sessions this event falls within the gap of: it joins them (and joins them together).
        let touching = list.indices.filter {
            eventTime >= states.start[Int(list[$0])] - gap && eventTime < states.end[Int(list[$0])]
        }
        let state: Int32
        if let first = touching.first {
            // Of the sessions the event joins, the one that opened first takes in the others, so that its entry in
            // the session heap (by end, then opening) stays right: its end only grows. They are neighbours in the
            // list, so it ends up where the earliest was.
            var taker = list[first]
            for index in touching where states.opened[Int(list[index])] < states.opened[Int(taker)] {
                taker = list[index]
            }
            state = taker
            for index in touching.reversed() where list[index] != state {
                states.merge(list[index], into: state)
                release(list[index])
                list.remove(at: index)
                open -= 1
            }
            let slot = Int(state)
            states.start[slot] = min(states.start[slot], eventTime)
            states.lastTime[slot] = max(states.lastTime[slot], eventTime)
            states.end[slot] = states.lastTime[slot] + gap
        } else {
            state = states.open(group: group, start: eventTime, end: eventTime + gap)
            groups.opened(in: group)
            let position = list.firstIndex { states.start[Int($0)] > eventTime } ?? list.count
            list.insert(state, at: position)
            open += 1
            sessionHeap.push(state, states)
        }
        groups.states[Int(group)] = list
        states.fold(state, readings, values, time: eventTime, ingestNanos: ingestNanos)
    }

    /// Frees a state that was emitted or merged into another, and its group with its last state.
    private mutating func release(_ state: Int32) {
        let group = states.group[Int(state)]
        groups.closed(state, in: group)
        states.close(state)
        closedSinceFloor = true
    }

    // MARK: - Closing

    /// The end of the window that closes first, if any is open.
    private var earliestEnd: Int64? {
        switch window {
        case .tumbling: return windows.first?.end
        case .hopping(let size, let hop): return nextHoppingEnd(size: size, hop: hop)
        case .session: return sessionHeap.earliestOpenEnd
        }
    }

    /// The end of the first hopping window still to close that holds a pane: the first pane is in the windows
    /// ending `hop` to `size` after its start, and those up to ``closedThrough`` have closed (the pane went when the
    /// last of them did, so one is left).
    private func nextHoppingEnd(size: Int64, hop: Int64) -> Int64? {
        guard let first = windows.first else { return nil }
        return max(first.start + hop, lastClosedEnd(hop: hop) + hop)
    }

    /// The latest end a hopping window can have (a multiple of `hop`) at or before ``closedThrough``; `Int64.min`
    /// before anything closed.
    private func lastClosedEnd(hop: Int64) -> Int64 {
        closedThrough == .min ? .min : floorDivide(closedThrough, hop) * hop
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
        case .tumbling:
            while let first = windows.first, first.end <= limit {
                let closing = windows.removeFirst()
                // Every group of a window shares its bounds: formatted once.
                let bounds = (
                    JSONValue.string(RFC3339.format(epochMillis: closing.start)),
                    JSONValue.string(RFC3339.format(epochMillis: closing.end))
                )
                for state in closing.states {
                    emit(state, bounds: bounds, partial: partial, into: &output, &pass)
                    release(state)
                }
                groups.endRound()
                open -= closing.states.count
            }
        case .hopping(let size, let hop):
            while let end = nextHoppingEnd(size: size, hop: hop), end <= limit {
                emitHoppingWindow(start: end - size, end: end, partial: partial, into: &output, &pass)
                closedThrough = end
                // The panes that no open window holds go.
                while let first = windows.first, first.start + size <= end {
                    for state in first.states { release(state) }
                    windows.removeFirst()
                }
                groups.endRound()
            }
            closedThrough = max(closedThrough, limit)
        case .session:
            while let state = sessionHeap.popOpen(endingBy: limit, states) {
                let slot = Int(state)
                let bounds = (
                    JSONValue.string(RFC3339.format(epochMillis: states.start[slot])),
                    JSONValue.string(RFC3339.format(epochMillis: states.end[slot]))
                )
                emit(state, bounds: bounds, partial: partial, into: &output, &pass)
                release(state)
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
        case .tumbling: return windows.last?.end
        case .hopping(let size, _): return windows.last.map { $0.start + size }
        case .session: return states.latestEnd
        }
    }

    /// Over `max_groups`: the window that would close first is emitted now, marked partial, and counted. False
    /// when none was open.
    private mutating func evictOldest(into output: inout [Event], _ pass: inout TransformPass) -> Bool {
        guard let end = earliestEnd else { return false }
        let before = open
        closeWindows(through: end, partial: true, into: &output, &pass)
        evicted += before - open
        watermark = max(watermark, end)
        return open < before
    }

    /// Emits the hopping window `start..<end`: each group with a pane in it, in the order of the group's first event
    /// there, its panes merged (a group with one pane there is emitted from that pane's state as it is).
    private mutating func emitHoppingWindow(
        start: Int64, end: Int64, partial: Bool, into output: inout [Event], _ pass: inout TransformPass
    ) {
        windowGroups.removeAll(keepingCapacity: true)
        for pane in windows {
            // The panes are in order, and none starts before `start` (see `nextHoppingEnd`).
            guard pane.start < end else { break }
            for state in pane.states {
                let group = Int(states.group[Int(state)])
                if group >= windowGroupIndex.count {
                    windowGroupIndex.append(contentsOf: repeatElement(-1, count: group + 1 - windowGroupIndex.count))
                }
                let position = windowGroupIndex[group]
                guard position >= 0 else {
                    windowGroupIndex[group] = windowGroups.count
                    windowGroups.append((states.opened[Int(state)], state, false))
                    continue
                }
                // A second pane of the group: the first is copied into a state of the window's own.
                if !windowGroups[position].merged {
                    let merged = states.open(group: Int32(group), start: start, end: end)
                    states.merge(windowGroups[position].state, into: merged)
                    windowGroups[position].state = merged
                    windowGroups[position].merged = true
                }
                states.merge(state, into: windowGroups[position].state)
                windowGroups[position].first = min(windowGroups[position].first, states.opened[Int(state)])
            }
        }
        for entry in windowGroups { windowGroupIndex[Int(states.group[Int(entry.state)])] = -1 }
        windowGroups.sort { $0.first < $1.first }
        // Every group of a window shares its bounds: formatted once.
        let bounds = (
            JSONValue.string(RFC3339.format(epochMillis: start)), JSONValue.string(RFC3339.format(epochMillis: end))
        )
        for entry in windowGroups {
            emit(entry.state, bounds: bounds, partial: partial, into: &output, &pass)
            if entry.merged { states.close(entry.state) }
        }
        open -= windowGroups.count
    }

    /// Appends the event for `state`, whose window's bounds are `bounds` as text.
    private mutating func emit(
        _ state: Int32, bounds: (start: JSONValue, end: JSONValue), partial: Bool, into output: inout [Event],
        _ pass: inout TransformPass
    ) {
        // The output fields are distinct (the config checks): no search per field.
        var fields: [JSONObject.Field] = []
        fields.reserveCapacity(groupFields.count + aggregations.count + 3)
        for (field, value) in zip(groupFields, groups.values(of: states.group[Int(state)])) {
            fields.append(JSONObject.Field(key: field, value: value))
        }
        fields.append(JSONObject.Field(key: "window_start", value: bounds.start))
        fields.append(JSONObject.Field(key: "window_end", value: bounds.end))
        let resultsStart = fields.count
        states.appendResults(state, aggregations, to: &fields)
        // A sum past the largest double, or a deviation whose squares are: JSON has no infinity, so it is written
        // as null, and said so.
        for index in resultsStart..<fields.count {
            guard case .double(let number) = fields[index].value, !number.isFinite else { continue }
            fields[index].value = .null
            overflowReports.report(to: log) { [id, aggregations] in
                let aggregation = aggregations[index - resultsStart]
                return "\(id): \(aggregation.function.rawValue) for '\(aggregation.field)' in the window from "
                    + "\(JSONWriter.string(bounds.start)) overflowed double precision; written as null"
            } summary: { [id] in
                "\(id): \($0) more results overflowed double precision and were written as null"
            }
        }
        if partial { fields.append(JSONObject.Field(key: "partial", value: true)) }
        let ingestNanos = min(states.firstIngestNanos[Int(state)], MonotonicClock.nanos())
        output.append(Event(.object(JSONObject(uniqueFields: fields)), ingestNanos: ingestNanos))
        pass.created += 1
    }
}

/// A min-heap of open sessions by end, then by the order they opened in: one entry per session, pushed when it
/// opens. A session that grew since is pushed again with its new end when its entry comes up; one that was
/// merged into another or emitted is dropped then (its state's generation tells it from a later session that took
/// over the same state number). So the heap holds about one entry per open session.
struct SessionHeap: Sendable {
    private struct Entry: Sendable {
        let end: Int64
        let order: Int
        let state: Int32
        let generation: UInt32
    }

    private var entries: [Entry] = []

    /// Fixes the top entry (re-pushing a session that grew, dropping one closed), so that ``earliestOpenEnd`` is
    /// the end of the session that closes first.
    mutating func settle(_ states: WindowStates) {
        while let top = entries.first {
            let slot = Int(top.state)
            if states.closed[slot] || states.generation[slot] != top.generation {
                pop()
            } else if states.end[slot] != top.end {
                pop()
                push(Entry(end: states.end[slot], order: top.order, state: top.state, generation: top.generation))
            } else {
                return
            }
        }
    }

    /// Adds the session `state` of `states`, just opened.
    mutating func push(_ state: Int32, _ states: WindowStates) {
        let slot = Int(state)
        push(
            Entry(end: states.end[slot], order: states.opened[slot], state: state, generation: states.generation[slot]))
    }

    private mutating func push(_ entry: Entry) {
        entries.append(entry)
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.less(entries[child], entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// The end of the session that closes first, once ``settle(_:)`` has run.
    var earliestOpenEnd: Int64? { entries.first?.end }

    /// Removes and returns the first open session whose end is at most `limit`.
    mutating func popOpen(endingBy limit: Int64, _ states: WindowStates) -> Int32? {
        settle(states)
        guard let top = entries.first, top.end <= limit else { return nil }
        pop()
        return top.state
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

    private static func less(_ a: Entry, _ b: Entry) -> Bool {
        a.end != b.end ? a.end < b.end : a.order < b.order
    }
}

/// Division rounding towards minus infinity, so that windows before 1970 align too.
func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
    let quotient = value / divisor
    return (value % divisor != 0 && (value < 0) != (divisor < 0)) ? quotient - 1 : quotient
}
