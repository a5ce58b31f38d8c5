import Foundation
import SluiceCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the real `sluice` binary with real pipes: stdin in, stdout out, metrics to a file.
@Suite(.serialized, .blocking)
struct StdinPipelineEndToEndTests {
    static func pipeline(policy: String, maxEvents: Int = 1000, interval: String = "0.5") -> String {
        """
        sources:
          in: {type: stdin}
        sinks:
          out:
            type: stdout
            inputs: [in]
            buffer: {max_events: \(maxEvents), when_full: \(policy)}
        metrics: {interval_secs: \(interval), to: "$METRICS", format: json}
        """
    }

    @Test func aMillionLinesThroughBlockArriveCompleteAndInOrderWithBoundedMemory() throws {
        let pipeline = try TemporaryPipeline(Self.pipeline(policy: "block"))
        defer { pipeline.remove() }
        let count = 1_000_000
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed(sensorChunks(count: count))
        // A deliberately slow reader at first: Sluice must stop reading stdin rather than buffer.
        var output = Data()
        for _ in 0..<150 {
            guard let data = child.readChunk(limit: 1 << 14) else { break }
            output.append(data)
            usleep(2000)
        }
        output.append(child.readAllOutput())
        #expect(child.waitForExit() == 0)

        let lines = output.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        #expect(lines.count == count + 1)
        #expect(lines.last?.isEmpty == true)
        var mismatches = 0
        for index in 0..<min(count, lines.count)
        where String(decoding: lines[index], as: UTF8.self) != sensorLine(index) {
            mismatches += 1
        }
        #expect(mismatches == 0)

        let sink = try #require(try pipeline.finalComponent("out"))
        #expect(sink.int("received_events_total") == count)
        #expect(sink.int("sent_events_total") == count)
        #expect(sink.int("buffer", "high_water_events") ?? .max <= 1000)
        if case .double(let blocked)? = sink["buffer"]?["blocked_secs_total"] {
            // Under a sanitizer Sluice itself can be slower than the slow reader, so that nothing waits.
            #expect(underSanitizer || blocked > 0)
        } else {
            Issue.record("no blocked time in the final report")
        }
        let rss = try #require(try pipeline.reports().last?.int("process", "max_rss_bytes"))
        #expect(underSanitizer || rss < 100 << 20, "peak RSS \(rss) bytes")
        for id in ["in", "out"] { #expect(try pipeline.finalComponent(id)?.balances == true) }
    }

    /// A filter and a map right after stdin run in the source's sending, on each half of a read on the thread
    /// that decoded it: 300,000 lines (every 997th not JSON) come out filtered, mapped once each, complete and in
    /// order, and every component's counts are those of stages in tasks of their own.
    @Test func aFilterAndAMapAfterStdinRunAsItDecodesAndLoseNothing() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              in: {type: stdin}
            transforms:
              warm: {type: filter, inputs: [in], condition: ".temp >= 20"}
              fahrenheit: {type: map, inputs: [warm], set: {temp_f: ".temp * 9 / 5 + 32"}}
            sinks:
              out: {type: stdout, inputs: [fahrenheit]}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let count = 300_000
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed { chunk in
            let start = chunk * 1000
            guard start < count else { return nil }
            var text = ""
            for index in start..<min(count, start + 1000) {
                text += (index % 997 == 0 ? "not json \(index)" : sensorLine(index)) + "\n"
            }
            return Data(text.utf8)
        }
        let output = String(decoding: child.readAllOutput(), as: UTF8.self)
        #expect(child.waitForExit() == 0)
        let kept = (0..<count).filter { $0 % 997 != 0 && $0 % 400 >= 200 }
        let lines = output.split(separator: "\n")
        #expect(lines.count == kept.count)
        var wrong = 0
        for (line, index) in zip(lines, kept) {
            // The line as it came in, its closing brace replaced by the one field the map appended.
            let original = sensorLine(index)
            let prefix = original.dropLast() + #","temp_f":"#
            let fahrenheit = Double(index % 400) / 10 * 9 / 5 + 32
            if !line.hasPrefix(prefix) || Double(line.dropFirst(prefix.count).dropLast()) != fahrenheit { wrong += 1 }
        }
        #expect(wrong == 0, "\(wrong) lines out of place, changed or mapped twice")
        let source = try #require(try pipeline.finalComponent("in"))
        #expect(source.int("discarded_events_total", "parse_error") == (count + 996) / 997)
        for id in ["warm", "fahrenheit"] {
            let component = try #require(try pipeline.finalComponent(id))
            #expect(component["buffer"] == .null, "\(id)")
            #expect(component["runs_in"] == .string("in"), "\(id)")
        }
        #expect(try pipeline.finalComponent("fahrenheit")?.int("sent_events_total") == kept.count)
        for id in ["in", "warm", "fahrenheit", "out"] {
            #expect(try pipeline.finalComponent(id)?.balances == true, "\(id)")
        }
    }

    /// With a drop policy the source never waits: the whole input is read while nobody reads stdout, then stdout
    /// is drained. Returns the output lines' sequence numbers and the sink's final figures.
    func runWithStalledReader(policy: String, count: Int) throws -> (seqs: [Int], sink: JSONValue, source: JSONValue) {
        let pipeline = try TemporaryPipeline(Self.pipeline(policy: policy, maxEvents: 1000, interval: "0"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        let fed = DispatchSemaphore(value: 0)
        let chunks = sensorChunks(count: count)
        child.feed { index in
            let chunk = chunks(index)
            if chunk == nil { fed.signal() }
            return chunk
        }
        // Nobody reads stdout until all input was accepted: only possible because nothing blocks.
        #expect(fed.wait(timeout: .now() + 60) == .success)
        let output = child.readAllOutput()
        #expect(child.waitForExit() == 0)
        let seqs = try output.split(separator: UInt8(ascii: "\n")).map { line in
            try JSONReader.parse(Array(line)).int("seq") ?? -1
        }
        return (seqs, try #require(try pipeline.finalComponent("out")), try #require(try pipeline.finalComponent("in")))
    }

    @Test func dropOldestKeepsTheNewestEventsAndCountsTheDrops() throws {
        let count = 200_000
        let (seqs, sink, source) = try runWithStalledReader(policy: "drop_oldest", count: count)
        let dropped = sink.int("discarded_events_total", "buffer_full") ?? 0
        #expect(dropped > 0)
        #expect(seqs.count + dropped == count)
        #expect(seqs == seqs.sorted())
        #expect(Array(seqs.suffix(1000)) == Array(count - 1000..<count), "the newest events are kept")
        #expect(sink.balances && source.balances)
    }

    @Test func dropNewestKeepsTheOldestEventsAndCountsTheDrops() throws {
        let count = 200_000
        let (seqs, sink, source) = try runWithStalledReader(policy: "drop_newest", count: count)
        let dropped = sink.int("discarded_events_total", "buffer_full") ?? 0
        #expect(dropped > 0)
        #expect(seqs.count + dropped == count)
        #expect(seqs == seqs.sorted())
        #expect(Array(seqs.prefix(1000)) == Array(0..<1000), "the oldest events are kept")
        #expect(sink.balances && source.balances)
    }

    /// With a `stdout` sink and no `metrics.to`, standard output carries only events and the reports go to standard
    /// error; saying `to: stdout` still puts them there. (The final table once ended every such run's output, and
    /// a reader such as jq failed on it.)
    @Test func reportsStayOffStandardOutputWhenEventsGoThere() throws {
        for (metrics, reportsOnStdout) in [
            ("", false), ("metrics: {interval_secs: 0}", false), ("metrics: {to: stdout}", true),
        ] {
            let pipeline = try TemporaryPipeline(
                """
                sources:
                  in: {type: stdin}
                sinks:
                  out: {type: stdout, inputs: [in]}
                \(metrics)
                """)
            defer { pipeline.remove() }
            let (status, output, errors) = try SluiceProcess.run(
                ["run", pipeline.path], stdin: "{\"n\":1}\n{\"n\":2}\n")
            #expect(status == 0)
            #expect(output.hasPrefix("{\"n\":1}\n{\"n\":2}\n"), "\(metrics)")
            #expect((output == "{\"n\":1}\n{\"n\":2}\n") == !reportsOnStdout, "\(metrics)")
            #expect(output.contains("sluice metrics (final)") == reportsOnStdout, "\(metrics)")
            #expect(errors.contains("sluice metrics (final)") == !reportsOnStdout, "\(metrics)")
        }
    }

    @Test func malformedAndOversizeLinesAreCountedAndTheGoodOnesArrive() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              in: {type: stdin, max_line_bytes: 100}
            sinks:
              out: {type: stdout, inputs: [in]}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let long = "{\"x\":\"" + String(repeating: "y", count: 500) + "\"}"
        let input = "{\"n\":1}\nnot json\n\(long)\n{\"n\":2}\r\n\n{\"n\":3,}\n\u{FEFF}{\"n\":4}\n{\"n\":5}"
        let (status, output, errors) = try SluiceProcess.run(["run", pipeline.path], stdin: input)
        #expect(status == 0)
        #expect(output == "{\"n\":1}\n{\"n\":2}\n{\"n\":5}\n")
        #expect(errors.contains("in: line 2 is not valid JSON (unexpected 'n', expected a value at byte 1)"))
        #expect(errors.contains("in: line 3 is longer than max_line_bytes"))
        let source = try #require(try pipeline.finalComponent("in"))
        #expect(source.int("received_events_total") == 8)
        #expect(source.int("discarded_events_total", "parse_error") == 4)
        #expect(source.int("discarded_events_total", "oversize") == 1)
        #expect(source.int("sent_events_total") == 3)
    }

    @Test func sigtermDrainsAndWritesABalancedFinalReport() throws {
        let pipeline = try TemporaryPipeline(Self.pipeline(policy: "block", interval: "0"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        // An endless feed: only the signal can end this run.
        child.feed(sensorChunks(count: Int.max))
        var output = child.readChunk() ?? Data()
        #expect(!output.isEmpty)
        kill(child.process.processIdentifier, SIGTERM)
        output.append(child.readAllOutput())
        #expect(child.waitForExit(seconds: 30) == 0)
        #expect(output.last == UInt8(ascii: "\n"), "stdout ends with a whole line")
        let lines = output.split(separator: UInt8(ascii: "\n"))
        let sink = try #require(try pipeline.finalComponent("out"))
        #expect(sink.int("sent_events_total") == lines.count)
        #expect(sink.balances)
        #expect(try pipeline.finalComponent("in")?.balances == true)
    }

    /// A seeded moment (in bytes of output read), a signal and a policy.
    struct Interruption: Sendable, CustomTestStringConvertible {
        let seed: UInt64
        let signal: Int32
        let policy: String
        var testDescription: String { "seed \(seed), \(signal == SIGINT ? "SIGINT" : "SIGTERM"), \(policy)" }

        /// Output bytes to read before signalling: anywhere in the first 30 MB of about 90 MB (splitmix64).
        var moment: Int {
            var z = seed &* 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % 30_000_000)
        }
    }

    @Test(arguments: [
        Interruption(seed: 1, signal: SIGTERM, policy: "block"),
        Interruption(seed: 2, signal: SIGINT, policy: "block"),
        Interruption(seed: 3, signal: SIGTERM, policy: "drop_oldest"),
        Interruption(seed: 4, signal: SIGINT, policy: "drop_newest"),
    ])
    func aSignalAtAnyMomentOfAMillionEventRunEndsBalancedOnAWholeLine(_ interruption: Interruption) throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              in: {type: stdin}
            transforms:
              cool: {type: filter, inputs: [in], condition: .temp < 35}
              fahrenheit: {type: map, inputs: [cool], set: {temp_f: .temp * 9 / 5 + 32}}
            sinks:
              out:
                type: stdout
                inputs: [fahrenheit]
                buffer: {max_events: 1000, when_full: \(interruption.policy)}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed(sensorChunks(count: 1_000_000))
        var output = Data()
        while output.count < interruption.moment, let chunk = child.readChunk() { output.append(chunk) }
        kill(child.process.processIdentifier, interruption.signal)
        output.append(child.readAllOutput())
        #expect(child.waitForExit(seconds: 60) == 0)
        #expect(output.last == UInt8(ascii: "\n"), "stdout ends with a whole line")
        let lines = output.split(separator: UInt8(ascii: "\n"))
        #expect(try JSONReader.parse(Array(lines.last ?? Data())).int("seq") != nil, "the last line is a whole event")
        let sink = try #require(try pipeline.finalComponent("out"))
        #expect(sink.int("sent_events_total") == lines.count)
        for id in ["in", "cool", "fahrenheit", "out"] {
            #expect(try pipeline.finalComponent(id)?.balances == true, "\(id) balances")
        }
    }

    @Test func sighupDoesNotEndTheRun() throws {
        let pipeline = try TemporaryPipeline(Self.pipeline(policy: "block", interval: "0"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed(sensorChunks(count: Int.max))
        #expect(child.readChunk() != nil)
        kill(child.process.processIdentifier, SIGHUP)
        // SIGHUP reloads the file, which has not changed.
        #expect(child.waitForErrorText("reload (SIGHUP): unchanged: no component changed"), "\(child.errorText)")
        // Still running and still passing events on: it reads and writes far more than a pipe holds.
        var after = 0
        while after < 1 << 20, let chunk = child.readChunk() { after += chunk.count }
        #expect(after >= 1 << 20)
        #expect(child.process.isRunning)
        kill(child.process.processIdentifier, SIGTERM)
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0)
    }

    /// A SIGTERM sent as soon as the process has set what SIGTERM does (caught or ignored, as /proc shows it), while
    /// the run is still starting, is acted on: the process ends, never ignores it, even on stdin that never ends.
    /// Dispatch signal sources, registered asynchronously after the signal was set to be ignored, lost such a one.
    @Test func aSignalWhileStartingIsNeverIgnored() throws {
        let pipeline = try TemporaryPipeline(Self.pipeline(policy: "block", interval: "0"))
        defer { pipeline.remove() }
        for attempt in 0..<10 {
            let child = SluiceProcess(["run", pipeline.path])
            try child.start()
            defer { child.killIfRunning() }
            let pid = child.process.processIdentifier
            let handled = UInt64(1) << (SIGTERM - 1)
            var looks = 0
            while looks < 200_000,
                (Self.signalMask("SigCgt", of: pid) | Self.signalMask("SigIgn", of: pid)) & handled == 0
            {
                looks += 1
            }
            kill(pid, SIGTERM)
            // 0 when the run had set what a stop does, 130 when it had not yet (it exits at once).
            let status = child.waitForExit(seconds: 20)
            #expect(status == 0 || status == 130, "attempt \(attempt): status \(String(describing: status))")
        }
    }

    /// A SIGHUP reloads whichever thread of the process it is delivered to: each thread that does not block it is
    /// aimed at in turn (kill(2) with a thread id prefers that thread). A handler made in main.swift's top-level
    /// code checked that it ran on the main thread and crashed elsewhere.
    @Test func aSignalIsActedOnWhicheverThreadTakesIt() throws {
        let pipeline = try TemporaryPipeline(Self.pipeline(policy: "block", interval: "0"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        defer { child.killIfRunning() }
        child.feed(sensorChunks(count: Int.max))
        #expect(child.readChunk() != nil, "the run is under way")
        let pid = child.process.processIdentifier
        let hangUp = UInt64(1) << (SIGHUP - 1)
        let threads = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [])
            .compactMap { Int32($0) }
            .filter { Self.signalMask("SigBlk", of: pid, thread: $0) & hangUp == 0 }
        #expect(threads.count >= 2, "the main thread and the relay's at least: \(threads)")
        for (index, thread) in threads.enumerated() {
            kill(thread, SIGHUP)
            #expect(
                child.waitForErrorText("reload (SIGHUP): unchanged: no component changed", times: index + 1),
                "thread \(thread): \(child.errorText)")
        }
        kill(pid, SIGTERM)
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0, "\(child.errorText)")
    }

    /// A signal set from /proc/PID/status (`SigCgt`, `SigIgn`, ...), or that of one of its threads, as a bit mask;
    /// 0 once the process is gone.
    static func signalMask(_ field: String, of pid: Int32, thread: Int32? = nil) -> UInt64 {
        let path = thread.map { "/proc/\(pid)/task/\($0)/status" } ?? "/proc/\(pid)/status"
        guard let status = try? String(contentsOfFile: path, encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") })
        else { return 0 }
        return UInt64(line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces), radix: 16) ?? 0
    }

    @Test func aSecondSignalExitsAtOnceWith130() throws {
        let pipeline = try TemporaryPipeline(Self.pipeline(policy: "block", interval: "0"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed(sensorChunks(count: Int.max))
        // Read one chunk, then stop reading: the drain after the first signal cannot finish while stdout is full.
        #expect(child.readChunk() != nil)
        kill(child.process.processIdentifier, SIGTERM)
        kill(child.process.processIdentifier, SIGINT)
        #expect(child.waitForExit(seconds: 20) == 130)
    }

    @Test func aClosedStdoutEndsTheRunPromptlyAndQuietly() throws {
        let pipeline = try TemporaryPipeline(Self.pipeline(policy: "block", interval: "0"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed(sensorChunks(count: Int.max))
        // `| head -1`: read one chunk, then close the read end.
        _ = child.readChunk(limit: 100)
        try child.output.fileHandleForReading.close()
        let started = ContinuousClock.now
        #expect(child.waitForExit(seconds: 20) == 0)
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(child.errorText.isEmpty, "no noise on stderr: \(child.errorText)")
    }

    @Test func textDecodingAndEncodingPassLinesThrough() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              in: {type: stdin, decoding: text}
            transforms: {}
            sinks:
              out: {type: stdout, inputs: [in], encoding: text}
              raw: {type: file, inputs: [in], path: "\(FileManager.default.temporaryDirectory.path)/sluice-e2e-text.jsonl", mode: truncate}
            metrics: {interval_secs: 0, to: "$METRICS"}
            """)
        defer { pipeline.remove() }
        let (status, output, _) = try SluiceProcess.run(
            ["run", pipeline.path], stdin: "plain line\r\n\n\"quoted\" é\n")
        #expect(status == 0)
        #expect(output == "plain line\n\n\"quoted\" é\n")
        let file = try String(
            contentsOfFile: FileManager.default.temporaryDirectory.path + "/sluice-e2e-text.jsonl", encoding: .utf8)
        #expect(file == "{\"message\":\"plain line\"}\n{\"message\":\"\"}\n{\"message\":\"\\\"quoted\\\" é\"}\n")
    }
}

/// `multiline` on a live pipe: a trace is one event, emitted by the timeout while stdin stays open.
@Suite(.blocking)
struct StdinMultilineEndToEndTests {
    @Test func aTraceIsOneEventAndTheTimeoutEmitsTheLastOneWithoutTheNextLine() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              in:
                type: stdin
                decoding: text
                multiline: {start_pattern: '^\\d{4}-', timeout_ms: 200}
            sinks:
              out: {type: stdout, inputs: [in]}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        let first = "orphan line\n2026-12-01 ERROR boom\n  at a(A.java:1)\n  at b(B.java:2)\n2026-12-01 INFO next\n"
        let released = DispatchSemaphore(value: 0)
        child.feed { index in
            switch index {
            case 0: return Data(first.utf8)
            case 1:
                // stdin stays open until the test has seen the timeout emit the open event.
                _ = released.wait(timeout: .now() + 60)
                return Data("2026-12-01 INFO last\n\tcontinued".utf8)
            default: return nil
            }
        }
        var output = Data()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, output.split(separator: UInt8(ascii: "\n")).count < 3,
            let chunk = child.readChunkIfAvailable(waitingMillis: 1000)
        {
            output.append(chunk)
        }
        released.signal()
        let early = try output.split(separator: UInt8(ascii: "\n")).map { try JSONReader.parse(Array($0)) }
        #expect(
            early == [
                ["message": "orphan line"],
                ["message": "2026-12-01 ERROR boom\n  at a(A.java:1)\n  at b(B.java:2)"],
                ["message": "2026-12-01 INFO next"],
            ], "the open event came out while stdin was still open")
        output.append(child.readAllOutput())
        #expect(child.waitForExit() == 0)
        let all = try output.split(separator: UInt8(ascii: "\n")).map { try JSONReader.parse(Array($0)) }
        #expect(all.last == ["message": "2026-12-01 INFO last\n\tcontinued"])
        let source = try #require(try pipeline.finalComponent("in"))
        #expect(source.int("received_events_total") == 4)
        #expect(source.int("sent_events_total") == 4)
        #expect(source.int("multiline", "lines_joined_total") == 3)
        #expect(source.int("multiline", "events_cut_total") == 0)
        #expect(source.balances)
    }
}
