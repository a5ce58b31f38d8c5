import SluiceCore
import SluiceTesting
import Synchronization
import Testing

/// The aggregate transform driven directly: batches in, the wall clock chosen by the test, and every output checked
/// by hand. (`AggregateEndToEndTests` checks it against an independent computation in Python.)
struct AggregateTransformTests {
    /// A reading of `device` at `second` seconds past 12:00:00 (epoch milliseconds in `ts`).
    static func reading(_ device: String, _ second: Double, _ temperature: JSONValue = 20.0) -> JSONValue {
        ["device": .string(device), "ts": .int(base + Int64(second * 1000)), "temperature": temperature]
    }

    /// 2026-11-30T12:00:00Z.
    static let base: Int64 = 1_796_040_000_000

    static func time(_ second: Int) -> JSONValue { .string(RFC3339.format(epochMillis: base + Int64(second) * 1000)) }

    struct Run {
        var transform: any Transform
        var output: [JSONValue] = []
        var folded = 0
        var created = 0
        var discards = DiscardCounts()

        mutating func feed(_ events: [JSONValue], at now: Int64 = 0) {
            var batch = events.map { Event($0) }
            var pass = TransformPass(nowMillis: now)
            transform.process(&batch, &pass)
            record(batch, pass)
        }

        mutating func advance(at now: Int64) {
            var batch: [Event] = []
            var pass = TransformPass(nowMillis: now)
            transform.advance(&batch, &pass)
            record(batch, pass)
        }

        mutating func finish(stopping: Bool, at now: Int64 = 0) {
            var batch: [Event] = []
            var pass = TransformPass(nowMillis: now)
            transform.finish(&batch, &pass, stopping: stopping)
            record(batch, pass)
        }

        private mutating func record(_ batch: [Event], _ pass: TransformPass) {
            output += batch.map(\.value)
            folded += pass.folded
            created += pass.created
            discards.add(pass.discards)
            #expect(pass.created == batch.count, "every output event is counted as created")
        }
    }

    static func run(_ options: String) throws -> Run {
        Run(transform: try TransformHarness.make("aggregate", options))
    }

    @Test func tumblingEventTimeWindowsCloseOnTheWatermarkInOrder() throws {
        var run = try Self.run(
            """
            {group_by: [.device], window: {type: tumbling, size_secs: 10}, time: {field: .ts, allowed_lateness_secs: 2},
             aggregations: {n: count(), avg: avg(.temperature), lo: min(.temperature), hi: max(.temperature),
                            total: sum(.temperature), first: first(.temperature), last: last(.temperature)}}
            """)
        run.feed([
            Self.reading("b", 1, 10.0), Self.reading("a", 2, 1.0), Self.reading("b", 9, 30.0),
            // Out of order, within the lateness: still in window [0, 10).
            Self.reading("a", 11, 5.0), Self.reading("a", 8, 3.0),
        ])
        #expect(run.output.isEmpty, "the watermark (11 - 2 = 9 s) has not reached 10 s")
        run.feed([Self.reading("b", 12.5, 7.0)])
        // The watermark passed 10 s: the window closes, groups in the order they appeared.
        #expect(
            run.output == [
                [
                    "device": "b", "window_start": Self.time(0), "window_end": Self.time(10), "n": 2, "avg": 20.0,
                    "lo": 10.0, "hi": 30.0, "total": 40.0, "first": 10.0, "last": 30.0,
                ],
                [
                    "device": "a", "window_start": Self.time(0), "window_end": Self.time(10), "n": 2, "avg": 2.0,
                    "lo": 1.0, "hi": 3.0, "total": 4.0, "first": 1.0, "last": 3.0,
                ],
            ])
        // An event for the closed window is late.
        run.feed([Self.reading("a", 9.9)])
        #expect(run.discards[.late] == 1)
        run.finish(stopping: false)
        #expect(run.output.count == 4)
        #expect(
            run.output[2]["device"] == "a" && run.output[2]["n"] == 1 && run.output[2]["window_end"] == Self.time(20))
        #expect(run.output[3]["device"] == "b" && run.output[3]["partial"] == nil)
        #expect(run.folded == 6 && run.created == 4)
        #expect(run.transform.state?.size == 0)
    }

    @Test func hoppingWindowsEachHoldTheEventsTheyCover() throws {
        var run = try Self.run(
            """
            {window: {type: hopping, size_secs: 30, hop_secs: 10}, time: {field: .ts},
             aggregations: {n: count()}}
            """)
        run.feed([Self.reading("a", 5), Self.reading("a", 15), Self.reading("a", 25), Self.reading("a", 35)])
        // Each event is in three windows; those ending by 35 s have closed: [-20, 10) and [-10, 20) and [0, 30).
        #expect(run.output.map { $0["n"] } == [1, 2, 3])
        #expect(run.output.map { $0["window_end"] } == [Self.time(10), Self.time(20), Self.time(30)])
        // An event at 12 s still belongs to the open [10, 40); it is not late, though two of its windows closed.
        run.feed([Self.reading("a", 12)])
        #expect(run.discards[.late] == 0)
        run.finish(stopping: false)
        // [10, 40) has 15, 25, 35 and 12; [-10, 20) and [0, 30) had closed before 12 came.
        #expect(run.output.map { $0["n"] } == [1, 2, 3, 4, 2, 1])
        #expect(run.folded == 5 && run.created == 6)
    }

    @Test func sessionsEndAfterTheGapAndJoinWhenAnEventBridgesThem() throws {
        var run = try Self.run(
            """
            {group_by: [.device], window: {type: session, gap_secs: 10},
             time: {field: .ts, allowed_lateness_secs: 10},
             aggregations: {n: count(), first: first(.temperature), last: last(.temperature)}}
            """)
        run.feed([
            Self.reading("a", 0, 1.0), Self.reading("a", 5, 2.0), Self.reading("b", 6, 9.0),
            // 20 s is more than the gap after 5 s: a second session for a.
            Self.reading("a", 20, 3.0), Self.reading("c", 26),
        ])
        // The watermark is 26 - 10 = 16 s: a's first session ended at 15 s, b's at 16 s.
        #expect(run.output.map { $0["device"] } == ["a", "b"])
        #expect(run.output[0]["n"] == 2 && run.output[0]["window_end"] == Self.time(15))
        run.feed([Self.reading("a", 35, 5.0), Self.reading("a", 27, 4.0)])
        // 27 s is within the gap of [20, 30) and of [35, 45): it joins them into one session from 20 s to 45 s.
        run.finish(stopping: false)
        #expect(run.output.map { $0["device"] } == ["a", "b", "c", "a"], "in window-end order: 15, 16, 36, 45 s")
        #expect(run.output[3]["n"] == 3 && run.output[3]["first"] == 3.0 && run.output[3]["last"] == 5.0)
        #expect(run.output[3]["window_start"] == Self.time(20) && run.output[3]["window_end"] == Self.time(45))
        #expect(run.transform.state?.size == 0)
    }

    @Test func processingTimeWindowsCloseOnTheClock() throws {
        var run = try Self.run("{window: {type: tumbling, size_secs: 1}, aggregations: {n: count()}}")
        run.feed([["x": 1], ["x": 2]], at: 10_200)
        #expect(run.transform.deadline == 11_000)
        run.advance(at: 10_999)
        #expect(run.output.isEmpty)
        run.advance(at: 11_000)
        #expect(
            run.output == [
                [
                    "window_start": .string(RFC3339.format(epochMillis: 10_000)),
                    "window_end": .string(RFC3339.format(epochMillis: 11_000)), "n": 2,
                ]
            ])
        #expect(run.transform.deadline == nil, "nothing is open")
        run.feed([["x": 3]], at: 12_500)
        run.finish(stopping: true, at: 12_700)
        #expect(run.output.last?["partial"] == true, "a window cut short by a stop is marked partial")
    }

    /// Hopping windows on processing time: the deadline is the end of the next window that holds a pane, and
    /// each window merges the panes it holds when the clock passes its end.
    @Test func processingTimeHoppingWindowsCloseOnTheClock() throws {
        var run = try Self.run("{window: {type: hopping, size_secs: 2, hop_secs: 1}, aggregations: {n: count()}}")
        func window(_ start: Int64, _ count: Int64) -> JSONValue {
            [
                "window_start": .string(RFC3339.format(epochMillis: start)),
                "window_end": .string(RFC3339.format(epochMillis: start + 2_000)), "n": .int(count),
            ]
        }
        run.feed([["x": 1]], at: 10_200)
        #expect(run.transform.deadline == 11_000 && run.transform.state?.size == 2)
        run.advance(at: 11_000)
        #expect(run.output == [window(9_000, 1)])
        #expect(run.transform.deadline == 12_000 && run.transform.state?.size == 1)
        run.feed([["x": 2]], at: 11_500)
        #expect(run.transform.state?.size == 2, "the window ending at 12 s holds both panes and counts once")
        run.advance(at: 12_000)
        run.advance(at: 13_000)
        #expect(run.output == [window(9_000, 1), window(10_000, 2), window(11_000, 1)])
        #expect(run.transform.deadline == nil && run.transform.state?.size == 0)
    }

    @Test func anIdleEventTimeInputIsFlushed() throws {
        var run = try Self.run(
            "{window: {type: tumbling, size_secs: 60}, time: {field: .ts, idle_flush_secs: 5}, aggregations: {n: count()}}"
        )
        run.feed([Self.reading("a", 1), Self.reading("a", 2)], at: 100_000)
        #expect(run.transform.deadline == 105_000)
        run.advance(at: 105_000)
        #expect(run.output.map { $0["n"] } == [2])
        #expect(run.output[0]["partial"] == nil)
        // The flushed window is closed: another event for it is late.
        run.feed([Self.reading("a", 3)], at: 106_000)
        #expect(run.discards[.late] == 1)
    }

    @Test func overMaxGroupsTheOldestWindowIsEmittedEarlyAndCounted() throws {
        var run = try Self.run(
            """
            {group_by: [.device], window: {type: tumbling, size_secs: 10},
             time: {field: .ts, allowed_lateness_secs: 60}, aggregations: {n: count()}, max_groups: 3}
            """)
        run.feed([Self.reading("a", 1), Self.reading("b", 2), Self.reading("c", 11)])
        #expect(run.output.isEmpty)
        run.feed([Self.reading("d", 12)])
        // Four open group windows: the oldest window, [0, 10) with a and b, goes early.
        #expect(run.output.map { $0["device"] } == ["a", "b"])
        #expect(run.output.allSatisfy { $0["partial"] == true })
        #expect(run.transform.state == TransformState(name: "open_windows", size: 2, evictedTotal: 2))
        run.feed([Self.reading("a", 5)])
        #expect(run.discards[.late] == 1, "its window was emitted")
    }

    /// Hopping windows are kept as panes, one state per group and hop, merged when a window closes; what is open
    /// is still counted in windows (`max_groups` and `open_windows` mean what they did): a group's windows are
    /// those holding any of its events, whatever order the events come in and whatever gaps lie between them.
    /// Within a window the groups come in the order of their first event in it, though that event's pane may be
    /// the window's last.
    @Test func hoppingWindowsCountTheWindowsOfEveryPaneAndMergeThemInOrder() throws {
        var run = try Self.run(
            """
            {group_by: [.device], window: {type: hopping, size_secs: 30, hop_secs: 10},
             time: {field: .ts, allowed_lateness_secs: 1000},
             aggregations: {n: count(), first: first(.temperature), last: last(.temperature),
                            p50: 'percentile(.temperature, 50)', some: 'collect(.temperature, 2)'}}
            """)
        // The windows (by end, in seconds) holding any of `times`: [end - 30, end) for ends on multiples of 10.
        func windows(_ times: [Int]) -> Set<Int> {
            Set(times.flatMap { time in stride(from: time / 10 * 10 + 10, through: time / 10 * 10 + 30, by: 10) })
        }
        var seen: [String: [Int]] = [:]
        let arrivals: [(String, Int)] = [
            ("b", 125), ("a", 105), ("a", 195), ("b", 101), ("a", 145), ("a", 101), ("c", 300), ("a", 165),
            ("b", 160), ("a", 100),
        ]
        for (device, second) in arrivals {
            run.feed([Self.reading(device, Double(second), .double(Double(second)))])
            seen[device, default: []].append(second)
            let open = seen.values.reduce(0) { $0 + windows($1).count }
            #expect(run.transform.state?.size == open, "after \(device) at \(second) s")
        }
        run.finish(stopping: false)
        #expect(run.transform.state?.size == 0)
        // Every window of every group once, in order of end, each group's events merged from its panes.
        let expected = Set(seen.flatMap { device, times in windows(times).map { "\(device)@\($0)" } })
        let emitted = run.output.compactMap { window -> String? in
            guard case .string(let device)? = window["device"], case .string(let end)? = window["window_end"],
                let millis = RFC3339.parse(end)
            else { return nil }
            return "\(device)@\((millis - Self.base) / 1000)"
        }
        #expect(emitted.count == expected.count && Set(emitted) == expected)
        // [100, 130) holds b at 125 and 101 and a at 105, 101 and 100: b first (125 came first), its temperatures
        // (the seconds) in time order, though they came out of order.
        let window130 = run.output.filter { $0["window_end"] == Self.time(130) }
        #expect(window130.map { $0["device"] } == ["b", "a"])
        #expect(window130.map { $0["n"] } == [2, 3])
        #expect(window130.map { $0["first"] } == [101.0, 100.0] && window130.map { $0["last"] } == [125.0, 105.0])
        #expect(window130.map { $0["some"] } == [[101.0, 125.0], [100.0, 101.0]])
        #expect(window130.map { $0["p50"] } == [101.0, 101.0])
        #expect(run.folded == arrivals.count && run.created == run.output.count)
    }

    /// An event of a hopping aggregate opens up to `size / hop` windows at once: as many of the oldest go as it
    /// takes to stay within `max_groups` (one went, and a thousand devices' hour-long windows every second held 2.5
    /// million windows with a limit of 100,000).
    @Test func hoppingWindowsStayWithinMaxGroups() throws {
        var run = try Self.run(
            """
            {group_by: [.device], window: {type: hopping, size_secs: 10, hop_secs: 1},
             time: {field: .ts}, aggregations: {n: count()}, max_groups: 15}
            """)
        var received = 0
        for second in 0..<30 {
            let batch = ["a", "b", "c"].map { Self.reading($0, Double(second)) }
            received += batch.count
            run.feed(batch)
            let state = try #require(run.transform.state)
            #expect(state.size <= 15, "\(state.size) windows open after second \(second)")
        }
        run.finish(stopping: false)
        let state = try #require(run.transform.state)
        #expect(state.evictedTotal > 0)
        #expect(run.created == run.output.count)
        #expect(received == run.folded + run.discards.total)
        #expect(run.output.filter { $0["partial"] == true }.count == state.evictedTotal)
        // Every window an event went to counts it: three devices, each in ten windows a second but at the edges.
        let counted = run.output.reduce(0) { total, window in
            guard case .int(let count)? = window["n"] else { return total }
            return total + Int(count)
        }
        #expect(counted <= run.folded * 10 && counted > 0)
    }

    /// A hopping aggregate asks the runner for parts of `batch / (size / hop)` events, so that what one pass emits
    /// is bounded by `max_groups` and a batch, not by a batch times the windows an event belongs to; the others
    /// take any batch whole.
    @Test func hoppingWindowsTakeBatchesInPartsOfBoundedOutput() throws {
        let hourly = try TransformHarness.make(
            "aggregate",
            "{window: {type: hopping, size_secs: 3600, hop_secs: 1}, time: {field: .ts}, aggregations: {n: count()}}")
        #expect(hourly.maxEventsPerPass == 1)
        let minutes = try TransformHarness.make(
            "aggregate",
            "{window: {type: hopping, size_secs: 60, hop_secs: 10}, time: {field: .ts}, aggregations: {n: count()}}")
        #expect(minutes.maxEventsPerPass == EventBuffer.batchEvents / 6)
        let tumbling = try TransformHarness.make(
            "aggregate", "{window: {type: tumbling, size_secs: 60}, aggregations: {n: count()}}")
        #expect(tumbling.maxEventsPerPass == nil)
    }

    /// Events out of order open a group's windows out of order: each window is still found wherever it is in the
    /// group's list (the search starts where the last one stopped, and wraps around).
    @Test func hoppingWindowsOpenedOutOfOrderAreFound() throws {
        var run = try Self.run(
            """
            {window: {type: hopping, size_secs: 4, hop_secs: 2}, time: {field: .ts, allowed_lateness_secs: 100},
             aggregations: {n: count()}}
            """)
        run.feed([Self.reading("a", 5), Self.reading("a", 1), Self.reading("a", 3), Self.reading("a", 7)])
        run.feed([Self.reading("a", 2), Self.reading("a", 6)])
        run.finish(stopping: false)
        // Windows [k, k + 4) for even k; an event at t is in the two with k <= t < k + 4.
        let expected: [JSONValue] = [(-2, 2, 1), (0, 4, 3), (2, 6, 3), (4, 8, 3), (6, 10, 2)].map { start, end, count in
            ["window_start": Self.time(start), "window_end": Self.time(end), "n": .int(Int64(count))]
        }
        #expect(run.output == expected)
    }

    @Test func badValuesAreErrorsAndNullsAreSkipped() throws {
        var run = try Self.run(
            """
            {window: {type: tumbling, size_secs: 10}, time: {field: .ts},
             aggregations: {n: count(), known: count(.temperature), avg: avg(.temperature)}}
            """)
        run.feed([
            Self.reading("a", 1, 10.0), Self.reading("a", 2, nil), Self.reading("a", 3, "hot"),
            ["device": "a", "temperature": 5.0], ["ts": "yesterday"],
        ])
        run.finish(stopping: false)
        #expect(run.discards[.error] == 3)
        #expect(
            run.output == [
                ["window_start": Self.time(0), "window_end": Self.time(10), "n": 2, "known": 1, "avg": 10.0]
            ])
    }

    /// JSON has no infinity: a sum past the largest double, and a deviation whose squares overflow, are written as
    /// null and named on stderr; the window's other results stand.
    @Test func resultsThatOverflowDoublesAreNullAndReported() throws {
        let messages = Mutex<[String]>([])
        var run = Run(
            transform: try TransformHarness.make(
                "aggregate",
                """
                {window: {type: tumbling, size_secs: 10}, time: {field: .ts},
                 aggregations: {n: count(), total: sum(.temperature), spread: stddev(.temperature),
                   top: max(.temperature)}}
                """,
                log: Logger { line in messages.withLock { $0.append(line) } }))
        run.feed([Self.reading("a", 1, 1e308), Self.reading("a", 2, 1.5e308), Self.reading("a", 11, 1e200)])
        run.finish(stopping: false)
        #expect(
            run.output == [
                [
                    "window_start": Self.time(0), "window_end": Self.time(10), "n": 2, "total": nil, "spread": nil,
                    "top": 1.5e308,
                ],
                [
                    "window_start": Self.time(10), "window_end": Self.time(20), "n": 1, "total": 1e200,
                    "spread": nil, "top": 1e200,
                ],
            ])
        let lines = messages.withLock { $0 }
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.allSatisfy { $0.contains("overflowed double precision; written as null") }, "\(lines)")
        #expect(lines.first?.contains("sum for 'total' in the window from \"2026-11-30T12:00:00.000Z\"") == true)
    }

    /// A closed window's state is reused by a later one: every accumulator must start empty again, whichever
    /// group takes it over. Each window's results are computed here from that window's values alone.
    @Test func aWindowReusingAClosedOnesStateStartsEmpty() throws {
        var run = try Self.run(
            """
            {group_by: [.device], window: {type: tumbling, size_secs: 10}, time: {field: .ts},
             aggregations: {n: count(), lo: min(.temperature), hi: max(.temperature), total: sum(.temperature),
                            mean: avg(.temperature), sd: stddev(.temperature), p50: 'percentile(.temperature, 50)',
                            kinds: distinct_count(.temperature), first: first(.temperature),
                            last: last(.temperature), some: 'collect(.temperature, 2)'}}
            """)
        var expected: [JSONValue] = []
        for window in 0..<6 {
            // Two groups a window, alternating which comes first, so that a freed state goes to the other group.
            let devices = window % 2 == 0 ? ["a", "b"] : ["b", "a"]
            for device in devices {
                let values = (0..<5).map { Double(window * 100 + (device == "a" ? 0 : 50) + $0 * $0) }
                run.feed(
                    values.enumerated().map { index, value in
                        Self.reading(device, Double(window * 10 + index), .double(value))
                    })
                let mean = values.reduce(0, +) / 5
                let sd = (values.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / 4).squareRoot()
                expected.append([
                    "device": .string(device), "window_start": Self.time(window * 10),
                    "window_end": Self.time(window * 10 + 10), "n": 5, "lo": .double(values[0]),
                    "hi": .double(values[4]), "total": .double(values.reduce(0, +)), "mean": .double(mean),
                    "sd": .double(sd), "kinds": 5, "first": .double(values[0]), "last": .double(values[4]),
                    "some": .array(values.prefix(2).map { .double($0) }),
                ])
            }
        }
        run.finish(stopping: false)
        #expect(run.output.count == expected.count)
        for (output, wanted) in zip(run.output, expected) {
            // The estimates, and the deviation (Welford's sums round differently from the two passes here), apart.
            var exact = output
            if case .object(var object) = exact {
                object["p50"] = nil
                object["sd"] = wanted["sd"]
                exact = .object(object)
            }
            #expect(exact == wanted)
            let sd = try #require(output["sd"]?.doubleValue)
            let wantedSD = try #require(wanted["sd"]?.doubleValue)
            #expect(abs(sd - wantedSD) <= 1e-12 * wantedSD)
            let median = try #require(wanted["lo"]?.doubleValue).advanced(by: 4)
            let p50 = try #require(output["p50"]?.doubleValue)
            #expect(abs(p50 - median) <= 0.01 * median, "the median of that window alone: \(p50) against \(median)")
        }
    }

    /// Groups stay known through one closed window and are forgotten after a window without them: one that skips
    /// windows, one new in each, and numbers reused, every output still carries its own group's values.
    @Test func groupsThatSkipWindowsComeBackWithTheirOwnValues() throws {
        var run = try Self.run(
            "{group_by: [.device, .site], window: {type: tumbling, size_secs: 10}, time: {field: .ts}, aggregations: {n: count()}}"
        )
        let windows = [["a", "b"], ["a", "c"], ["d", "b", "c"], ["b"], ["a", "d", "e"]]
        var expected: [JSONValue] = []
        for (window, devices) in windows.enumerated() {
            var events: [JSONValue] = []
            for (position, device) in devices.enumerated() {
                for index in 0...position {
                    events.append([
                        "device": .string(device), "site": .string("site-" + device),
                        "ts": .int(Self.base + Int64(window * 10 + index) * 1000),
                    ])
                }
                expected.append([
                    "device": .string(device), "site": .string("site-" + device),
                    "window_start": Self.time(window * 10), "window_end": Self.time(window * 10 + 10),
                    "n": .int(Int64(position + 1)),
                ])
            }
            run.feed(events)
        }
        run.finish(stopping: false)
        #expect(run.output == expected)
        #expect(run.folded == windows.map { $0.count * ($0.count + 1) / 2 }.reduce(0, +))
    }

    /// A session merged into another leaves a stale entry behind in the order of closing; when another group's
    /// session takes over the merged one's state, the stale entry must not lend it the first group's place among
    /// sessions ending together.
    @Test func aStateTakenOverAfterASessionMergeKeepsItsGroupsOrder() throws {
        var run = try Self.run(
            """
            {group_by: [.device], window: {type: session, gap_secs: 10},
             time: {field: .ts, allowed_lateness_secs: 100}, aggregations: {n: count()}}
            """)
        // a: sessions from 0 s and from 15 s, joined by the event at 8 s; c and then b: sessions ending at 90 s, b
        // taking over the state of a's merged session; d moves the watermark past a's session.
        run.feed([
            Self.reading("a", 0), Self.reading("a", 15), Self.reading("c", 80), Self.reading("a", 8),
            Self.reading("b", 80), Self.reading("d", 140),
        ])
        #expect(run.output.map { $0["device"] } == ["a"])
        #expect(run.output.first?["n"] == 3 && run.output.first?["window_end"] == Self.time(25))
        run.finish(stopping: false)
        #expect(run.output.map { $0["device"] } == ["a", "c", "b", "d"], "c and b end together: c began first")
        #expect(run.transform.state?.size == 0)
    }

    /// Sessions that end together come out in the order they began, whatever else their groups have open: a group's
    /// second session began after another group's session, so it comes after it, though the group was seen first.
    /// (Ordered by the group, this depended on whether the group had been forgotten in between.) Of sessions that
    /// an event joins, the one that began first takes the others in.
    @Test func sessionsEndingTogetherComeOutInTheOrderTheyBegan() throws {
        var run = try Self.run(
            """
            {group_by: [.device], window: {type: session, gap_secs: 5},
             time: {field: .ts, allowed_lateness_secs: 100}, aggregations: {n: count()}}
            """)
        // b from 1 s; c from 20 s; b again from 20 s (its session from 1 s still open): both end at 25 s.
        run.feed([Self.reading("b", 1), Self.reading("c", 20), Self.reading("b", 20)])
        // d from 52 s; e from 52 s; d from 44 s; the event at 48 s joins d's two sessions, and the one from 52 s,
        // which began first, takes the other in: d's session ends with e's at 57 s and comes first.
        run.feed([Self.reading("d", 52), Self.reading("e", 52), Self.reading("d", 44), Self.reading("d", 48)])
        run.finish(stopping: false)
        #expect(run.output.map { $0["device"] } == ["b", "c", "b", "d", "e"])
        #expect(run.output.map { $0["window_end"] } == [6, 25, 25, 57, 57].map { Self.time($0) })
        #expect(run.output[3]["window_start"] == Self.time(44) && run.output[3]["n"] == 3)
        #expect(run.transform.state?.size == 0)
    }

    /// Epoch milliseconds beyond what RFC 3339 writes (years 0000 to 9999) would overflow a window's bounds: such
    /// an event is an error, and the others fold on.
    @Test func timesBeyondTheYearsWindowsAreWrittenInAreErrors() throws {
        var run = try Self.run(
            "{window: {type: tumbling, size_secs: 10}, time: {field: .ts}, aggregations: {n: count()}}")
        run.feed([
            ["ts": .int(.max)], ["ts": .int(.min)], ["ts": .int(253_402_300_800_000)], ["ts": 9e15],
            ["ts": .int(Self.base)],
        ])
        run.finish(stopping: false)
        #expect(run.discards[.error] == 4)
        #expect(run.output == [["window_start": Self.time(0), "window_end": Self.time(10), "n": 1]])
    }

    /// Percentiles within 1 % of the exact value at rank ⌊q (n − 1)⌋; distinct counts exact below 1,000 and within
    /// 2 % above 10,000; sum, mean and deviation exact in double precision.
    @Test func sketchesAndMomentsKeepTheirStatedAccuracy() throws {
        var run = try Self.run(
            """
            {window: {type: tumbling, size_secs: 3600}, time: {field: .ts},
             aggregations: {p50: 'percentile(.v, 50)', p95: 'percentile(.v, 95)', p99: 'percentile(.v, 99)',
                            few: distinct_count(.few), many: distinct_count(.many), mean: avg(.v), sd: stddev(.v),
                            total: sum(.v), some: 'collect(.n, 3)'}}
            """)
        var generator = SplitMix64(seed: 3)
        var values: [Double] = []
        var batch: [JSONValue] = []
        for index in 0..<50_000 {
            // Positive and negative values over six orders of magnitude.
            let magnitude = pow(10, Double(generator.next() % 6_000) / 1_000 - 2)
            let value = generator.next() % 10 == 0 ? -magnitude : magnitude
            values.append(value)
            batch.append([
                "ts": .int(Self.base + Int64(index)), "v": .double(value), "few": .int(Int64(index % 777)),
                "many": .string("k\(generator.next() % 20_000)"), "n": .int(Int64(index)),
            ])
        }
        run.feed(batch)
        run.finish(stopping: false)
        let result = try #require(run.output.first)
        let sorted = values.sorted()
        for (field, q) in [("p50", 0.5), ("p95", 0.95), ("p99", 0.99)] {
            let exact = sorted[Int((q * Double(sorted.count - 1)).rounded(.down))]
            let estimate = try #require(result[field]?.doubleValue)
            #expect(abs(estimate - exact) <= 0.01 * abs(exact), "\(field): \(estimate) against \(exact)")
        }
        #expect(result["few"] == 777)
        var distinct = Set<UInt64>()
        var replay = SplitMix64(seed: 3)
        for _ in 0..<50_000 {
            _ = replay.next()
            _ = replay.next()
            distinct.insert(replay.next() % 20_000)
        }
        let many = Double(try #require(result["many"]?.intValue))
        #expect(abs(many - Double(distinct.count)) <= 0.02 * Double(distinct.count), "\(many) of \(distinct.count)")
        let mean = values.reduce(0, +) / Double(values.count)
        let deviation = (values.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(values.count - 1)).squareRoot()
        #expect(abs(try #require(result["mean"]?.doubleValue) - mean) <= 1e-9 * max(1, abs(mean)))
        #expect(abs(try #require(result["sd"]?.doubleValue) - deviation) <= 1e-9 * deviation)
        #expect(result["some"] == [0, 1, 2])
    }
}

#if canImport(Glibc)
    import Glibc
#endif
