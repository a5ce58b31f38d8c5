import Foundation
import SluiceCore
import SluiceTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `aggregate` transform through the real binary, against an independent computation of the same input in
/// Python (`Peers/aggregate_reference.py`): seeded simulator readings, put slightly out of order (within the allowed
/// lateness), with late copies beyond it, for every window type, every function, an idle flush, the end of input
/// and a stop in the middle of a window.
@Suite(.serialized, .blocking)
struct AggregateEndToEndTests {
    /// Seeded readings from the simulator: 20 devices, 20,000 readings, stretched to 100 a second of event time
    /// (the simulator's virtual clock gives 1,000), in order.
    static func readings() throws -> String {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              sim:
                type: simulator
                devices: 20
                rate: max
                count: 20000
                seed: 42
                start_time: 2026-11-30T12:00:00Z
                anomalies: {spike_probability: 0.01, dropout_probability: 0.02}
            sinks:
              out: {type: stdout, inputs: [sim]}
            metrics: {interval_secs: 0, to: "$METRICS"}
            """)
        defer { pipeline.remove() }
        let result = try SluiceProcess.run(["run", pipeline.path])
        #expect(result.status == 0)
        return try python(["prepare", "--stretch", "10"], input: result.output)
    }

    /// Runs the reference script with `arguments` on `input`; returns its output.
    static func python(_ arguments: [String], input: String) throws -> String {
        try ReferencePeer.run("aggregate_reference.py", arguments, input: input)
    }

    /// One test case: the pipeline's aggregate options and the reference's configuration of the same.
    struct Case {
        var window: String
        var time = "{field: .ts, allowed_lateness_secs: 2}"
        var aggregations: String
        var reference: [String: Any]
    }

    static let allFunctions = """
        readings: count()
          with_humidity: count(.humidity)
          avg_temp: avg(.temperature)
          min_temp: min(.temperature)
          max_temp: max(.temperature)
          seq_total: sum(.seq)
          first_lat: first(.lat)
          last_lat: last(.lat)
          p50_temp: percentile(.temperature, 50)
          p95_temp: percentile(.temperature, 95)
          seqs: distinct_count(.seq)
          spread: stddev(.temperature)
          some: collect(.seq, 5)
        """

    static var allFunctionsReference: [[Any]] {
        [
            ["readings", "count", "", 0], ["with_humidity", "count", "humidity", 0],
            ["avg_temp", "avg", "temperature", 0],
            ["min_temp", "min", "temperature", 0], ["max_temp", "max", "temperature", 0],
            ["seq_total", "sum", "seq", 0],
            ["first_lat", "first", "lat", 0], ["last_lat", "last", "lat", 0],
            ["p50_temp", "percentile", "temperature", 50], ["p95_temp", "percentile", "temperature", 95],
            ["seqs", "distinct_count", "seq", 0], ["spread", "stddev", "temperature", 0],
            ["some", "collect", "seq", 5],
        ]
    }

    /// The aggregate pipeline over stdin.
    static func pipeline(_ testCase: Case, interval: Double = 0) -> String {
        let aggregations = testCase.aggregations.split(separator: "\n")
            .map { "      " + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "\n")
        return """
            sources:
              in: {type: stdin}
            transforms:
              agg:
                type: aggregate
                inputs: [in]
                group_by: [.device]
                window: \(testCase.window)
                time: \(testCase.time)
                aggregations:
            \(aggregations)
            sinks:
              out: {type: stdout, inputs: [agg]}
            metrics: {interval_secs: \(interval), to: "$METRICS", format: json}
            """
    }

    /// Checks Sluice's output against the reference's, row by row: groups, windows and exact aggregations equal;
    /// means and deviations within 1e-9 relative; percentiles within 1 % (DDSketch); distinct counts exact up to
    /// 1,000 and within 2 % above.
    static func compare(
        _ actual: String, _ expected: String, _ report: JSONValue?, _ functions: [[Any]],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let actualRows = try actual.split(separator: "\n").map { try JSONReader.parse(String($0)) }
        var expectedRows = try expected.split(separator: "\n").map { try JSONReader.parse(String($0)) }
        let tally = expectedRows.removeLast()
        #expect(actualRows.count == expectedRows.count, "rows", sourceLocation: sourceLocation)
        #expect(actualRows.count > 10, "a meaningful number of windows", sourceLocation: sourceLocation)
        for (actualRow, expectedRow) in zip(actualRows, expectedRows) {
            for key in ["device", "window_start", "window_end", "partial"] {
                #expect(actualRow[key] == expectedRow[key], "\(key) of \(expectedRow)", sourceLocation: sourceLocation)
            }
            for function in functions {
                let name = function[0] as! String
                let kind = function[1] as! String
                let got = actualRow[name] ?? .null
                let want = expectedRow[name] ?? .null
                switch kind {
                case "avg", "stddev", "sum":
                    guard let a = got.doubleValue, let b = want.doubleValue else {
                        #expect(got == want, "\(name) of \(expectedRow)", sourceLocation: sourceLocation)
                        continue
                    }
                    #expect(abs(a - b) <= 1e-9 * max(1, abs(b)), "\(name): \(a) \(b)", sourceLocation: sourceLocation)
                case "percentile":
                    guard let a = got.doubleValue, let b = want.doubleValue else {
                        #expect(got == want, "\(name) of \(expectedRow)", sourceLocation: sourceLocation)
                        continue
                    }
                    #expect(abs(a - b) <= 0.01 * abs(b) + 1e-12, "\(name): \(a) \(b)", sourceLocation: sourceLocation)
                case "distinct_count":
                    let a = Double(got.intValue ?? -1)
                    let b = Double(want.intValue ?? -2)
                    #expect(
                        b <= 1000 ? a == b : abs(a - b) <= 0.02 * b, "\(name): \(a) \(b)",
                        sourceLocation: sourceLocation)
                default:
                    // Numbers compare by value (20 and 20.0 alike); everything else exactly.
                    if let a = got.doubleValue, let b = want.doubleValue {
                        #expect(a == b, "\(name): \(a) \(b)", sourceLocation: sourceLocation)
                    } else {
                        #expect(got == want, "\(name) of \(expectedRow)", sourceLocation: sourceLocation)
                    }
                }
            }
        }
        if let report, case .array(let components)? = report["components"] {
            let aggregate = components.first { $0["component_id"] == "agg" }
            #expect(
                aggregate?.int("discarded_events_total", "late") == tally.int("__late__"),
                sourceLocation: sourceLocation)
            #expect(
                aggregate?.int("discarded_events_total", "error") == tally.int("__errors__"),
                sourceLocation: sourceLocation)
            #expect(aggregate?.int("created_events_total") == actualRows.count, sourceLocation: sourceLocation)
            for component in components {
                #expect(
                    component.balances, "\(component["component_id"] ?? nil) balances", sourceLocation: sourceLocation)
            }
        } else {
            Issue.record("no final report", sourceLocation: sourceLocation)
        }
    }

    static func referenceConfig(_ window: [String: Any], lateness: Int, functions: [[Any]]) throws -> String {
        var config = window
        config["lateness"] = lateness
        config["time"] = "ts"
        config["group_by"] = ["device"]
        config["aggregations"] = functions
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("agg-\(UUID().uuidString).json").path
        try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Runs the whole input through Sluice and the reference, and compares.
    func check(_ testCase: Case, input: String, lateness: Int = 2000, functions: [[Any]]) throws {
        let pipeline = try TemporaryPipeline(Self.pipeline(testCase))
        defer { pipeline.remove() }
        let result = try SluiceProcess.run(["run", pipeline.path], stdin: input)
        #expect(result.status == 0, "\(result.errors)")
        let config = try Self.referenceConfig(testCase.reference, lateness: lateness, functions: functions)
        defer { try? FileManager.default.removeItem(atPath: config) }
        let expected = try Self.python(["compute", "--config", config], input: input)
        try Self.compare(result.output, expected, try pipeline.reports().last, functions)
        // The late copies were late, and the dropouts (readings without temperature) were skipped, not errors.
        let tally = try JSONReader.parse(String(expected.split(separator: "\n").last ?? ""))
        #expect(tally.int("__late__") ?? 0 > 0)
        #expect(tally.int("__errors__") == 0)
    }

    @Test func tumblingWindowsWithEveryFunctionOutOfOrderAndLateEvents() throws {
        let input = try Self.python(["prepare", "--seed", "7", "--late", "40"], input: try Self.readings())
        try check(
            Case(
                window: "{type: tumbling, size_secs: 10}", aggregations: Self.allFunctions,
                reference: ["window": "tumbling", "size": 10_000]),
            input: input, functions: Self.allFunctionsReference)
    }

    @Test func hoppingWindowsOverlap() throws {
        let input = try Self.python(["prepare", "--seed", "8", "--late", "20"], input: try Self.readings())
        let functions: [[Any]] = [
            ["readings", "count", "", 0], ["avg_temp", "avg", "temperature", 0], ["max_temp", "max", "temperature", 0],
            ["p95_temp", "percentile", "temperature", 95],
        ]
        try check(
            Case(
                window: "{type: hopping, size_secs: 20, hop_secs: 5}",
                aggregations: """
                    readings: count()
                      avg_temp: avg(.temperature)
                      max_temp: max(.temperature)
                      p95_temp: percentile(.temperature, 95)
                    """,
                reference: ["window": "hopping", "size": 20_000, "hop": 5_000]),
            input: input, functions: functions)
    }

    @Test func sessionsSplitAtGapsAndJoinOutOfOrder() throws {
        // Per device: 20 readings (4 s), then 30 missing (6 s): gaps longer than the 5 s session gap.
        let input = try Self.python(
            ["prepare", "--seed", "9", "--late", "20", "--keep-mod", "50", "--keep-below", "20"],
            input: try Self.readings())
        let functions: [[Any]] = [
            ["readings", "count", "", 0], ["first_seq", "first", "seq", 0], ["last_seq", "last", "seq", 0],
            ["avg_temp", "avg", "temperature", 0], ["seqs", "collect", "seq", 3],
        ]
        try check(
            Case(
                window: "{type: session, gap_secs: 5}",
                aggregations: """
                    readings: count()
                      first_seq: first(.seq)
                      last_seq: last(.seq)
                      avg_temp: avg(.temperature)
                      seqs: collect(.seq, 3)
                    """,
                reference: ["window": "session", "gap": 5_000]),
            input: input, functions: functions)
    }

    /// Random streams (seeded, `aggregate_reference.py generate`): out of order by up to 15 s, with gaps, nulls and
    /// missing values, through every window type with sizes and lateness drawn from the seed, and every function.
    /// What comes out, in its order, and what is late agree with the reference: the cases above are single streams
    /// of evenly spaced readings, where ties between windows and far disorder are rare.
    @Test(arguments: 0..<30) func randomStreamsAgreeWithTheReference(seed: Int) throws {
        var random = SplitMix64(seed: UInt64(seed))
        let lateness = [0, 500, 1000, 2000, 5000].randomElement(using: &random)!
        let window: String
        let reference: [String: Any]
        switch seed % 3 {
        case 0:
            let size = [1, 2, 5, 10].randomElement(using: &random)!
            window = "{type: tumbling, size_secs: \(size)}"
            reference = ["window": "tumbling", "size": size * 1000]
        case 1:
            let hop = [1, 2].randomElement(using: &random)!
            let size = hop * [2, 3, 5].randomElement(using: &random)!
            window = "{type: hopping, size_secs: \(size), hop_secs: \(hop)}"
            reference = ["window": "hopping", "size": size * 1000, "hop": hop * 1000]
        default:
            let gap = [1, 2, 5].randomElement(using: &random)!
            window = "{type: session, gap_secs: \(gap)}"
            reference = ["window": "session", "gap": gap * 1000]
        }
        let input = try Self.python(["generate", "--seed", String(seed), "--count", "300"], input: "")
        // Every function of the one field the stream has, and a count of the events: for the pipeline, and in the
        // reference's form.
        let calls: [(name: String, function: String, parameter: Int?)] = [
            ("with_temp", "count", nil), ("total", "sum", nil), ("mean", "avg", nil), ("low", "min", nil),
            ("high", "max", nil), ("earliest", "first", nil), ("latest", "last", nil), ("median", "percentile", 50),
            ("spread", "stddev", nil), ("kinds", "distinct_count", nil), ("some", "collect", 3),
        ]
        let functions: [[Any]] =
            [["n", "count", "", 0]] + calls.map { [$0.name, $0.function, "temperature", $0.parameter ?? 0] }
        let aggregations =
            (["n: count()"]
            + calls.map { "\($0.name): '\($0.function)(.temperature\($0.parameter.map { ", \($0)" } ?? ""))'" })
            .joined(separator: "\n")
        let testCase = Case(
            window: window, time: "{field: .ts, allowed_lateness_secs: \(Double(lateness) / 1000)}",
            aggregations: aggregations, reference: reference)
        let pipeline = try TemporaryPipeline(Self.pipeline(testCase))
        defer { pipeline.remove() }
        let result = try SluiceProcess.run(["run", pipeline.path], stdin: input)
        #expect(result.status == 0, "\(result.errors)")
        let config = try Self.referenceConfig(reference, lateness: lateness, functions: functions)
        defer { try? FileManager.default.removeItem(atPath: config) }
        let expected = try Self.python(["compute", "--config", config], input: input)
        try Self.compare(result.output, expected, try pipeline.reports().last, functions)
    }

    /// Feeds `first`, waits for `condition` on what has come out (bounded), then feeds `rest` (or sends SIGTERM).
    func runInTwoPhases(
        _ pipeline: TemporaryPipeline, first: String, rest: String?,
        until condition: @escaping (String, [JSONValue]) -> Bool
    ) throws -> (output: String, status: Int32?) {
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        let writer = child.input.fileHandleForWriting
        try writer.write(contentsOf: Data(first.utf8))
        var output = ""
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if condition(output, (try? pipeline.reports()) ?? []) { break }
            // Reads block until output comes; the periodic metrics keep the condition re-checked meanwhile.
            if let chunk = child.readChunkIfAvailable(waitingMillis: 100) {
                output += String(decoding: chunk, as: UTF8.self)
            }
        }
        #expect(condition(output, (try? pipeline.reports()) ?? []), "the first phase completed")
        if let rest {
            try writer.write(contentsOf: Data(rest.utf8))
            try writer.close()
        } else {
            kill(child.process.processIdentifier, SIGTERM)
        }
        output += String(decoding: child.readAllOutput(), as: UTF8.self)
        let status = child.waitForExit()
        try? writer.close()
        return (output, status)
    }

    @Test func anIdleInputIsFlushedAndEventsForTheFlushedWindowsAreLate() throws {
        let lines = try Self.readings().split(separator: "\n").map(String.init)
        // 12,000 readings cover 120 s of event time: two windows of 60 s, the first closed by the watermark.
        let first = lines[0..<12_000].joined(separator: "\n") + "\n"
        // After the pause, 30 readings repeat the first phase's last ones, whose window the flush emitted (late),
        // and the rest continue where the first phase stopped.
        let rest = (lines[11_970..<12_000] + lines[12_000...]).joined(separator: "\n") + "\n"
        let testCase = Case(
            window: "{type: tumbling, size_secs: 60}", time: "{field: .ts, idle_flush_secs: 1}",
            aggregations: "readings: count()\n      avg_temp: avg(.temperature)",
            reference: ["window": "tumbling", "size": 60_000])
        let pipeline = try TemporaryPipeline(Self.pipeline(testCase, interval: 0.2))
        defer { pipeline.remove() }
        // The first window closes on the watermark (20 rows), the second is open until the flush emits it (20 more).
        let (output, status) = try runInTwoPhases(pipeline, first: first, rest: rest) { output, _ in
            output.split(separator: "\n").count >= 40
        }
        #expect(status == 0)
        let functions: [[Any]] = [["readings", "count", "", 0], ["avg_temp", "avg", "temperature", 0]]
        let config = try Self.referenceConfig(testCase.reference, lateness: 0, functions: functions)
        defer { try? FileManager.default.removeItem(atPath: config) }
        let expected = try Self.python(["compute", "--config", config], input: first + "{\"__flush__\":true}\n" + rest)
        try Self.compare(output, expected, try pipeline.reports().last, functions)
        #expect(pipeline.latest("agg")?.int("discarded_events_total", "late") == 30)
    }

    @Test func aStopInTheMiddleOfAWindowEmitsItAsPartial() throws {
        let lines = try Self.readings().split(separator: "\n").map(String.init)
        let first = lines[0..<9_000].joined(separator: "\n") + "\n"
        let testCase = Case(
            window: "{type: tumbling, size_secs: 60}", time: "{field: .ts, allowed_lateness_secs: 1}",
            aggregations: "readings: count()\n      max_temp: max(.temperature)",
            reference: ["window": "tumbling", "size": 60_000])
        let pipeline = try TemporaryPipeline(Self.pipeline(testCase, interval: 0.2))
        defer { pipeline.remove() }
        // SIGTERM once the aggregate has received all 9,000 (the second window, from 60 s to 120 s, is half full).
        let (output, status) = try runInTwoPhases(pipeline, first: first, rest: nil) { _, reports in
            TemporaryPipeline.component("agg", of: reports.last)?.int("received_events_total") == 9_000
        }
        #expect(status == 0)
        let functions: [[Any]] = [["readings", "count", "", 0], ["max_temp", "max", "temperature", 0]]
        let config = try Self.referenceConfig(testCase.reference, lateness: 1000, functions: functions)
        defer { try? FileManager.default.removeItem(atPath: config) }
        let expected = try Self.python(["compute", "--config", config], input: first + "{\"__stop__\":true}\n")
        try Self.compare(output, expected, try pipeline.reports().last, functions)
        #expect(output.contains("\"partial\":true"))
    }
}
