import Foundation
import SluiceCore
import SluiceSync
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `kafka` source and sink against librdkafka's mock cluster, hosted, fed and checked by an independent
/// Python peer (`Peers/kafka_peer.py`), through the real binary.
@Suite(
    .blocking,
    .serialized,
    .disabled(
        if: underThreadSanitizer,
        """
        librdkafka starts its threads with C11 thrd_create, which ThreadSanitizer does not intercept, and TSan's \
        allocator then crashes in them (SIGSEGV in calloc on rdk:main, before any Sluice code runs there)
        """))
struct KafkaEndToEndTests {
    /// `topics` -> `output` through Sluice in consumer group `group`; `sink` replaces the options of the `kafka`
    /// sink.
    static func copyPipeline(
        group: String, topics: String = "in", output: String = "out", sink: String? = nil
    ) -> String {
        let sink =
            sink ?? """
                type: kafka
                inputs: [in]
                bootstrap_servers: ${KAFKA_BROKERS}
                topic: \(output)
                key: .key
                """
        return """
            sources:
              in:
                type: kafka
                bootstrap_servers: ${KAFKA_BROKERS}
                topics: [\(topics)]
                group_id: \(group)
                auto_offset_reset: earliest
                commit_interval_ms: 200
                librdkafka_options: {session.timeout.ms: "6000", heartbeat.interval.ms: "500"}
            sinks:
              out:
            \(sink.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
            metrics: {interval_secs: 1, to: "$METRICS", format: json}
            """
    }

    static func start(
        _ pipeline: TemporaryPipeline, _ peer: KafkaPeer,
        feeding chunks: @escaping @Sendable (Int) -> Data? = { _ in nil }
    ) throws -> SluiceProcess {
        let child = SluiceProcess(["run", pipeline.path], environment: ["KAFKA_BROKERS": peer.brokers])
        try child.start()
        child.feed(chunks)
        return child
    }

    /// stdin, with `seq` renamed `n` (as the peer's `check` reads it), into a `kafka` sink `out` with `options`.
    static func numberedToKafka(_ options: String, intervalSecs: Double = 0) -> String {
        """
        sources:
          in: {type: stdin}
        transforms:
          numbered: {type: map, inputs: [in], rename: {seq: n}}
        sinks:
          out: {type: kafka, inputs: [numbered], bootstrap_servers: "${KAFKA_BROKERS}", \(options)}
        metrics: {interval_secs: \(intervalSecs), to: "$METRICS", format: json}
        """
    }

    /// Starts `pipeline`, whose sink is stdout, not read: returns once its source owns all four partitions of its
    /// topic and paused them.
    static func startUntilPaused(_ pipeline: TemporaryPipeline, _ peer: KafkaPeer) throws -> SluiceProcess {
        let child = try start(pipeline, peer)
        #expect(
            pipeline.waitForReport("in") { $0["paused"] == .bool(true) && $0.int("partitions_assigned") == 4 },
            "\(state(of: pipeline, child))")
        return child
    }

    /// A visitor that joins `group` for `secs` seconds (the peer's `visit`), in a thread of its own: `wait` gives
    /// its answer.
    struct Visit {
        private let done = DispatchSemaphore(value: 0)
        private let answer = Locked("")

        init(_ peer: KafkaPeer, group: String, topic: String, secs: Int) {
            let (done, answer) = (done, answer)
            Thread.detachNewThread {
                let reply = Result { try peer.ask("visit \(group) \(topic) \(secs)") }
                answer.locked { $0 = (try? reply.get()).map { "\($0)" } ?? "no answer: \(reply)" }
                done.signal()
            }
        }

        /// The visitor's answer once it left (within 90 s), or `nil`.
        func wait() -> String? {
            done.wait(timeout: .now() + 90) == .success ? answer.locked { $0 } : nil
        }
    }

    /// The `"n"` of each line of `output` that has one, in order.
    static func numbers(in output: Data) -> [Int] {
        String(decoding: output, as: UTF8.self).split(separator: "\n").compactMap { line -> Int? in
            guard let n = line.firstRange(of: #""n":"#) else { return nil }
            return Int(line[n.upperBound...].prefix { $0.isNumber })
        }
    }

    /// What a member of a test was doing, for the message of a wait that failed: its latest report of the source
    /// and the sink, and the end of its stderr.
    static func state(of pipeline: TemporaryPipeline, _ child: SluiceProcess) -> String {
        let components = ["in", "out"].map { id in pipeline.latest(id).map { JSONWriter.string($0) } ?? "no report" }
        return components.joined(separator: "\n") + "\nstderr: " + child.errorText.suffix(1500)
    }

    @Test func oneSluiceCopies100000EventsInOrderPerKeyAndCommitsExactlyWhatItWrote() throws {
        let peer = try KafkaPeer()
        defer { peer.stop() }
        #expect(try peer.ask("produce in 100000")["produced"] as? Int == 100_000)
        let pipeline = try TemporaryPipeline(Self.copyPipeline(group: "copy"))
        defer { pipeline.remove() }
        let child = try Self.start(pipeline, peer)
        defer { child.killIfRunning() }
        let check = try peer.ask("check out 100000 60")
        #expect(check["count"] as? Int == 100_000)
        #expect(check["distinct"] as? Int == 100_000)
        #expect(check["order_violations"] as? Int == 0)
        kill(child.process.processIdentifier, SIGTERM)
        #expect(child.waitForExit() == 0)
        #expect(try peer.ask("committed copy in")["sum"] as? Int == 100_000, "every offset read is committed")
        let source = try #require(try pipeline.finalComponent("in"))
        let sink = try #require(try pipeline.finalComponent("out"))
        #expect(source.int("received_events_total") == 100_000)
        #expect(sink.int("sent_events_total") == 100_000)
        #expect(source.balances && sink.balances)
        #expect((source.int("commits_total") ?? 0) >= 1)
        #expect(source.int("rebalances_total") ?? 0 >= 1)

        // The group's offsets hold: a second run of it reads nothing again.
        let again = try TemporaryPipeline(Self.copyPipeline(group: "copy"))
        defer { again.remove() }
        let second = try Self.start(again, peer)
        defer { second.killIfRunning() }
        #expect(again.waitForReport("in") { $0.int("partitions_assigned") == 4 })
        kill(second.process.processIdentifier, SIGTERM)
        #expect(second.waitForExit() == 0)
        #expect(try again.finalComponent("in")?.int("received_events_total") == 0)
    }

    /// A reload that gives the source new options: the old consumer commits what it finished and leaves the group,
    /// the new one joins it and goes on from the committed offsets. Nothing is read twice or skipped, and the
    /// counters go on.
    @Test func aReplacedSourceGoesOnFromTheCommittedOffsets() throws {
        let peer = try KafkaPeer()
        defer { peer.stop() }
        #expect(try peer.ask("produce in 50000")["produced"] as? Int == 50_000)
        let yaml = Self.copyPipeline(group: "replaced")
        let pipeline = try TemporaryPipeline(yaml)
        defer { pipeline.remove() }
        let child = try Self.start(pipeline, peer)
        defer { child.killIfRunning() }
        #expect(pipeline.waitForReport("out") { $0.int("sent_events_total") == 50_000 })
        try ReloadEndToEndTests().rewrite(
            pipeline, yaml.replacingOccurrences(of: "commit_interval_ms: 200", with: "commit_interval_ms: 300"))
        kill(child.process.processIdentifier, SIGHUP)
        #expect(child.waitForErrorText("applied: replaced 'in'"), "\(child.errorText)")
        #expect(try peer.ask("produce in 50000 10 50000")["produced"] as? Int == 50_000)
        let check = try peer.ask("check out 100000 60")
        #expect(check["count"] as? Int == 100_000)
        #expect(check["distinct"] as? Int == 100_000)
        kill(child.process.processIdentifier, SIGTERM)
        #expect(child.waitForExit() == 0, "\(child.errorText)")
        #expect(try peer.ask("committed replaced in")["sum"] as? Int == 100_000)
        let source = try #require(try pipeline.finalComponent("in"))
        #expect(source.int("received_events_total") == 100_000)
        #expect(source.balances)
    }

    /// Three processes in one group share 64 partitions (16 topics); one is killed (SIGKILL) and one stopped
    /// (SIGTERM) mid-run, and the last one takes their partitions over: every event comes out at least once. The
    /// output topic is chosen per event by a template (`out-{.lane}`).
    @Test func threeSluicesInOneGroupLoseNothingWhenOneIsKilledAndOneStopped() throws {
        let count = underSanitizer ? 200_000 : 1_000_000
        let peer = try KafkaPeer()
        defer { peer.stop() }
        // The mock keeps only about 5 MB of a partition and drops the oldest messages past it. 1,000,000 events of
        // about 90 bytes fill 16 partitions, and an output partition holds its duplicates too (238,051 in all once
        // in CI, where 32 partitions and 25 keys a topic put 40,000 events in one and the mock dropped 504): 64
        // partitions and 125 keys a topic put at most 20,500 in one, about 2 MB, under 5 MB even if each came twice.
        let inputs = (0..<16).map { "in-\($0)" }.joined(separator: ",")
        let outputs = (0..<16).map { "out-\($0)" }.joined(separator: ",")
        #expect(try peer.ask("produce \(inputs) \(count) 1000")["produced"] as? Int == count)
        let pipelines = try (0..<3).map { _ in
            try TemporaryPipeline(
                Self.copyPipeline(
                    group: "trio", topics: inputs.replacingOccurrences(of: ",", with: ", "), output: "out-{.lane}"))
        }
        defer { for pipeline in pipelines { pipeline.remove() } }
        let children = try pipelines.map { try Self.start($0, peer) }
        defer { for child in children { child.killIfRunning() } }
        // Each gets partitions (4 among 3), then the first is killed once it has copied some. (In a full test run
        // on a busy machine the group's rebalances as members join can take most of a minute: the waits for
        // progress allow five.)
        for (pipeline, child) in zip(pipelines, children) {
            #expect(
                pipeline.waitForReport("in") { ($0.int("partitions_assigned") ?? 0) >= 1 },
                "\(Self.state(of: pipeline, child))")
        }
        #expect(
            pipelines[0].waitForReport("out", seconds: 240) { ($0.int("sent_events_total") ?? 0) >= count / 20 },
            "\(Self.state(of: pipelines[0], children[0]))")
        let killedRead = pipelines[0].latest("in")?.int("received_events_total") ?? 0
        kill(children[0].process.processIdentifier, SIGKILL)
        #expect(
            pipelines[1].waitForReport("out", seconds: 240) { ($0.int("sent_events_total") ?? 0) >= count / 10 },
            "\(Self.state(of: pipelines[1], children[1]))")
        kill(children[1].process.processIdentifier, SIGTERM)
        #expect(children[1].waitForExit() == 0)
        #expect(pipelines[2].waitForReport("in") { $0.int("partitions_assigned") == 64 })

        let check = try peer.ask("check \(outputs) \(count) 120")
        #expect((check["truncated"] as? [String])?.isEmpty == true, "the mock dropped messages: \(check)")
        #expect(check["distinct"] as? Int == count, "every event is in the output at least once")
        #expect((check["missing"] as? [Int])?.isEmpty == true)
        let duplicates = try #require(check["duplicates"] as? Int)
        // Events after a member's last successful commit are read again by the partition's next owner: on this
        // machine 11,746 to 34,288 in five runs, once 219,050 in CI on a loaded machine. That one was most likely
        // a commit of the source's own answered "illegal generation" during a rebalance, which made librdkafka
        // 2.0.2 give up every partition (confluentinc/librdkafka#4059); since librdkafka's timer commits instead,
        // 11,916. At-least-once allows them; the bound only catches a runaway re-read.
        #expect(duplicates < count / 2, "duplicates \(duplicates), the killed process had read \(killedRead)")
        kill(children[2].process.processIdentifier, SIGTERM)
        #expect(children[2].waitForExit() == 0)
        #expect(children[0].waitForExit() == SIGKILL + 128 || children[0].process.terminationReason == .uncaughtSignal)
        var written = duplicates
        for pipeline in pipelines[1...] {
            let source = try #require(try pipeline.finalComponent("in"))
            let sink = try #require(try pipeline.finalComponent("out"))
            #expect(source.balances && sink.balances)
            #expect(source.int("received_events_total") == sink.int("sent_events_total"))
            written += sink.int("sent_events_total") ?? 0
        }
        #expect(try peer.ask("committed trio \(inputs)")["sum"] as? Int == count, "the survivor committed everything")
        print("kafka group: \(count) events, \(duplicates) duplicates, the killed process had read \(killedRead)")
    }

    /// A sink that does not keep up (stdout, not read for a while): the source pauses its partitions, memory stays
    /// bounded while the lag grows, and once the reader catches up the lag drains and nothing is missing.
    @Test func backpressurePausesThePartitionsAndTheLagDrainsWithNothingLost() throws {
        let count = 200_000
        let peer = try KafkaPeer(pad: 100)
        defer { peer.stop() }
        try peer.ask("produce slow-0,slow-1,slow-2,slow-3 \(count) 100")
        let pipeline = try TemporaryPipeline(
            Self.copyPipeline(
                group: "slow", topics: "slow-0, slow-1, slow-2, slow-3",
                sink: "type: stdout\ninputs: [in]\nbuffer: {max_events: 500}"))
        defer { pipeline.remove() }
        let child = try Self.start(pipeline, peer)
        defer { child.killIfRunning() }
        // Nothing is read from stdout: the pipe fills, the sink blocks, and the source pauses with most of the
        // input left in Kafka. (The lag shown covers the partitions whose end librdkafka has seen: on a loaded
        // machine a partition paused before its first fetch is not in it yet.)
        #expect(
            pipeline.waitForReport("in") { $0["paused"] == .bool(true) && ($0.int("consumer_lag") ?? 0) > 0 })
        let stalled = try #require(pipeline.latest("in"))
        let lagWhileStalled = stalled.int("consumer_lag") ?? 0
        #expect(stalled.int("pauses_total") ?? 0 >= 1)
        #expect((stalled.int("received_events_total") ?? .max) < count / 4, "the source holds back while paused")
        // Now read everything (bounded: a missing event ends the wait after 60 s, not never).
        var output = Data()
        var lines = 0
        let deadline = Date().addingTimeInterval(60)
        while lines < count, Date() < deadline, let chunk = child.readChunkIfAvailable(waitingMillis: 1_000) {
            output.append(chunk)
            lines += chunk.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
        }
        #expect(lines == count)
        #expect(pipeline.waitForReport("in") { $0.int("consumer_lag") == 0 }, "the lag drains")
        kill(child.process.processIdentifier, SIGTERM)
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0)
        let numbers = Set(
            String(decoding: output, as: UTF8.self).split(separator: "\n").compactMap { line -> Int? in
                guard let n = line.firstRange(of: #""n":"#) else { return nil }
                return Int(line[n.upperBound...].prefix { $0.isNumber })
            })
        #expect(numbers.count == count, "every event came out")
        let source = try #require(try pipeline.finalComponent("in"))
        #expect(source.int("received_events_total") == count && source.balances)
        let rss = Int(try #require(try pipeline.reports().last?["process"]?["max_rss_bytes"]?.intValue))
        if !underSanitizer { #expect(rss < 160 << 20, "peak RSS \(rss >> 20) MiB with \(count) events waiting") }
        print("kafka backpressure: lag \(lagWhileStalled) while stalled, peak RSS \(rss >> 20) MiB")
    }

    /// A partition paused for backpressure, taken away by a rebalance and given back once the source reads again,
    /// is read again. librdkafka keeps a partition's pause across its revocation (Java's consumer does not): the
    /// source resumed the partitions it still owned, and the one given back stayed paused for ever, its events
    /// never read. A second member (the peer) visits the group to make the rebalances.
    @Test func aPartitionGivenBackByARebalanceIsReadAgain() throws {
        let count = 40_000
        let peer = try KafkaPeer()
        defer { peer.stop() }
        try peer.ask("produce back \(count) 100")
        let pipeline = try TemporaryPipeline(
            Self.copyPipeline(
                group: "back", topics: "back", sink: "type: stdout\ninputs: [in]\nbuffer: {max_events: 100}"))
        defer { pipeline.remove() }
        // Nothing is read from stdout yet: the source pauses all four partitions.
        let child = try Self.startUntilPaused(pipeline, peer)
        defer { child.killIfRunning() }
        // A visitor joins for 10 s: two of them (paused in librdkafka) are taken away.
        let visit = Visit(peer, group: "back", topic: "back", secs: 10)
        #expect(
            pipeline.waitForReport("in") { $0.int("partitions_assigned") == 2 }, "\(Self.state(of: pipeline, child))")
        // Meanwhile stdout is read to its end: the source resumes the two it kept.
        let output = Locked(Data())
        Thread.detachNewThread {
            while let chunk = child.readChunk() { output.locked { $0.append(chunk) } }
        }
        #expect(
            pipeline.waitForReport("in") { $0["paused"] == .bool(false) }, "\(Self.state(of: pipeline, child))")
        // The visitor leaves, and the two come back.
        let answer = visit.wait()
        #expect(answer?.contains("read") == true, "the visitor answered \(answer ?? "nothing")")
        #expect(
            pipeline.waitForReport("in") { $0.int("partitions_assigned") == 4 }, "\(Self.state(of: pipeline, child))")
        // Every event comes out, the given-back partitions' included (read again from the last commit).
        func distinct() -> Int { Set(Self.numbers(in: output.locked { $0 })).count }
        let deadline = Date().addingTimeInterval(60)
        while distinct() < count, Date() < deadline { usleep(200_000) }
        #expect(distinct() == count, "\(Self.state(of: pipeline, child))")
        kill(child.process.processIdentifier, SIGTERM)
        #expect(child.waitForExit() == 0)
        let source = try #require(try pipeline.finalComponent("in"))
        #expect(source.balances)
        #expect(source.int("rebalances_total") ?? 0 >= 3)
    }

    /// A visitor joins the group while the pipeline is full (stdout not read) and takes two of the four
    /// partitions. With `drain_timeout_ms` the rebalance waits until what was read from them is written, and
    /// commits it: when the visitor (which commits nothing) leaves and they come back, nothing is read twice. With
    /// 0 they are given up at once, and what was in flight comes out twice: the scenario shows the difference.
    @Test(arguments: [true, false])
    func aRebalanceWaitsForWhatWasReadFromThePartitionsItTakesAway(drains: Bool) throws {
        let count = 20_000
        let topic = drains ? "drained" : "undrained"
        let peer = try KafkaPeer()
        defer { peer.stop() }
        try peer.ask("produce \(topic) \(count) 100")
        // What is in flight when the pipeline is full (the sink's buffer of 12,000, two batches of 1,000 in the
        // hand-off, what stdout's pipe holds) is more than three of the four partitions hold (about 5,000 each):
        // every partition has events in flight, whichever two the visitor takes. With 2,000 and fetches interleaved
        // (`max.partition.fetch.bytes`), one run in about twenty had read nothing of those two before the pipeline
        // filled, and so had nothing of them to read twice.
        let pipeline = try TemporaryPipeline(
            """
            sources:
              in:
                type: kafka
                bootstrap_servers: ${KAFKA_BROKERS}
                topics: [\(topic)]
                group_id: \(topic)
                auto_offset_reset: earliest
                commit_interval_ms: 200
                drain_timeout_ms: \(drains ? 5000 : 0)
                librdkafka_options:
                  session.timeout.ms: "6000"
                  heartbeat.interval.ms: "500"
            sinks:
              out: {type: stdout, inputs: [in], buffer: {max_events: 12000}}
            metrics: {interval_secs: 0.2, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let child = try Self.startUntilPaused(pipeline, peer)
        defer { child.killIfRunning() }
        let visit = Visit(peer, group: topic, topic: topic, secs: 15)
        // Draining, the source waits for the pipeline, which moves once stdout is read; not draining, the two
        // partitions go at once.
        #expect(
            pipeline.waitForReport("in") {
                drains ? $0["draining"] == .bool(true) : $0.int("partitions_assigned") == 2
            }, "\(Self.state(of: pipeline, child))")
        let output = Locked(Data())
        let outputEnded = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            while let chunk = child.readChunk() { output.locked { $0.append(chunk) } }
            outputEnded.signal()
        }
        #expect(
            pipeline.waitForReport("in") { $0.int("partitions_assigned") == 2 && $0["draining"] == .bool(false) },
            "\(Self.state(of: pipeline, child))")
        let answer = visit.wait()
        #expect(answer?.contains("read") == true, "the visitor answered \(answer ?? "nothing")")
        // The two come back, and everything is read to the end and written.
        #expect(
            pipeline.waitForReport("in", seconds: 90) {
                $0.int("partitions_assigned") == 4 && $0.int("consumer_lag") == 0
            }, "\(Self.state(of: pipeline, child))")
        #expect(
            pipeline.waitForReport("out") { report in
                report.int("sent_events_total") == pipeline.latest("in")?.int("received_events_total")
            }, "\(Self.state(of: pipeline, child))")
        kill(child.process.processIdentifier, SIGTERM)
        #expect(child.waitForExit() == 0, "\(child.errorText)")
        #expect(outputEnded.wait(timeout: .now() + 30) == .success)
        let numbers = Self.numbers(in: output.locked { $0 })
        #expect(Set(numbers).count == count, "every event is written")
        let duplicates = numbers.count - Set(numbers).count
        let source = try #require(try pipeline.finalComponent("in"))
        #expect(source.balances)
        if drains {
            #expect(source.int("drain_timeouts_total") == 0)
            // librdkafka's mock cluster refuses commits while any member rejoins the group ("rebalance in
            // progress"), where Kafka takes them with the current generation (its GroupCoordinator allows commits
            // while preparing a rebalance): in about one run in ten here a member rejoined while the source
            // drained, the commit after the drain was refused, and what it had drained was read again.
            let refused = child.errorText.contains("commit failed: Broker: Group rebalance in progress")
            #expect(duplicates == 0 || refused, "\(Self.state(of: pipeline, child))")
        } else {
            #expect(duplicates > 0, "what was in flight when the partitions went is read again")
        }
        print("kafka drain \(drains): \(duplicates) duplicates; the visitor: \(answer ?? "nothing")")
    }

    /// The examples as the README runs them: two `kafka-scale-out.yaml` processes share the readings and write the
    /// hot ones (a quarter of them) keyed by device; `kafka-to-stdout.yaml` prints those with their Kafka metadata.
    @Test func theKafkaExamplesScaleOutAndPrint() throws {
        let peer = try KafkaPeer()
        defer { peer.stop() }
        try peer.ask("produce sensor-readings 20000 100")
        let environment = ["KAFKA_BROKERS": peer.brokers]
        let workers = (0..<2).map { _ in
            SluiceProcess(["run", "Pipelines/kafka-scale-out.yaml"], environment: environment)
        }
        defer { for worker in workers { worker.killIfRunning() } }
        for worker in workers {
            try worker.start()
            worker.feed { _ in nil }
        }
        let check = try peer.ask("check sensor-alerts 5000 60")
        #expect(check["distinct"] as? Int == 5_000, "temperatures above 30 are a quarter of the readings")
        #expect(check["order_violations"] as? Int == 0)
        let printer = SluiceProcess(["run", "Pipelines/kafka-to-stdout.yaml"], environment: environment)
        defer { printer.killIfRunning() }
        try printer.start()
        printer.feed { _ in nil }
        // At least once: when the second worker joins, what the first had read but not committed is read again,
        // so the alerts may hold a few duplicates. Every reading is there; the printer reads until it saw each.
        var output = Data()
        var distinct: Set<Int> = []
        let deadline = Date().addingTimeInterval(60)
        while distinct.count < 5_000, Date() < deadline,
            let chunk = printer.readChunkIfAvailable(waitingMillis: 15_000)
        {
            output.append(chunk)
            // The last piece is a line still being written, or empty.
            let complete = String(decoding: output, as: UTF8.self)
                .split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            distinct = Set(complete.compactMap { (try? JSONReader.parse(String($0)))?["n"]?.intValue.map(Int.init) })
        }
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n")
        #expect(distinct.count == 5_000)
        #expect(lines.count >= 5_000)
        let first = try JSONReader.parse(String(try #require(lines.first)))
        let celsius = try #require(first["temperature"]?.doubleValue)
        #expect(first["temperature_f"]?.doubleValue == celsius * 9 / 5 + 32)
        #expect(first["_key"] == first["device"], "keyed by device")
        #expect(first["_partition"]?.intValue != nil && first["_offset"]?.intValue != nil)
        for child in workers + [printer] {
            kill(child.process.processIdentifier, SIGTERM)
            _ = child.readAllOutput()
            #expect(child.waitForExit() == 0)
        }
    }

    /// librdkafka's queue holds 100 messages here: the sink waits for deliveries instead of dropping, memory stays
    /// flat, and at the end of stdin the run ends once every message was acknowledged.
    @Test func aFullProducerQueueMakesTheSinkWaitAndNothingIsLost() throws {
        let count = 50_000
        let peer = try KafkaPeer()
        defer { peer.stop() }
        let pipeline = try TemporaryPipeline(
            Self.numberedToKafka(
                "topic: queued, key: .device, librdkafka_options: {queue.buffering.max.messages: \"100\"}"))
        defer { pipeline.remove() }
        let child = try Self.start(pipeline, peer, feeding: sensorChunks(count: count))
        defer { child.killIfRunning() }
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0, "the run ends at the end of stdin, after the last acknowledgement")
        let sink = try #require(try pipeline.finalComponent("out"))
        #expect(sink.int("sent_events_total") == count)
        #expect(sink.balances)
        #expect((sink.int("queue_full_waits_total") ?? 0) > 0, "the queue was full, and the sink waited")
        let check = try peer.ask("check queued \(count) 30")
        #expect(check["distinct"] as? Int == count)
        #expect(check["duplicates"] as? Int == 0, "the idempotent producer writes each message once")
    }

    /// Messages without a key go to the partitions in turn, a batch at a time, once the sink knows which have a
    /// leader (`partitions_available`): each of the 4 gets about a quarter, and every message arrives once.
    @Test func messagesWithoutAKeyGoToEveryPartitionInTurn() throws {
        let count = 100_000
        let peer = try KafkaPeer()
        defer { peer.stop() }
        let pipeline = try TemporaryPipeline(Self.numberedToKafka("topic: unkeyed", intervalSecs: 0.1))
        defer { pipeline.remove() }
        // The first thousand events make the topic; the rest follow once the sink knows its partitions.
        let known = DispatchSemaphore(value: 0)
        let chunks = sensorChunks(count: count + 1000)
        let child = try Self.start(pipeline, peer) { index in
            if index == 1 { known.wait() }
            return chunks(index)
        }
        defer { child.killIfRunning() }
        let ready = pipeline.waitForReport("out") {
            $0.int("sent_events_total") == 1000 && $0.int("partitions_available") == 4
        }
        known.signal()
        #expect(ready, "\(pipeline.latest("out").map { JSONWriter.string($0) } ?? "no report")")
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0)
        let sink = try #require(try pipeline.finalComponent("out"))
        #expect(sink.int("sent_events_total") == count + 1000)
        #expect(sink.balances)
        let ends = try #require(try peer.ask("spread unkeyed")["messages"] as? [String: Int])
        #expect(ends.count == 4)
        #expect(ends.values.reduce(0, +) == count + 1000, "every message once")
        // In turn, batches of at most 1,000: a quarter each, give or take a few batches.
        for (partition, messages) in ends.sorted(by: { $0.key < $1.key }) {
            #expect(messages > count / 5 && messages < count * 3 / 10, "partition \(partition): \(ends)")
        }
    }

    /// librdkafka refuses a message larger than `message.max.bytes` when it is queued: each such event of a batch
    /// is counted under `error` and named, and the rest of its batch is delivered, in order, once each.
    @Test func aMessageLibrdkafkaRefusesIsCountedAndTheRestOfItsBatchDelivered() throws {
        let count = 5_000
        let peer = try KafkaPeer()
        defer { peer.stop() }
        let pipeline = try TemporaryPipeline(
            """
            sources:
              in: {type: stdin}
            sinks:
              out:
                type: kafka
                inputs: [in]
                bootstrap_servers: ${KAFKA_BROKERS}
                topic: sized
                key: .key
                librdkafka_options: {message.max.bytes: "1000"}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path], environment: ["KAFKA_BROKERS": peer.brokers])
        defer { child.killIfRunning() }
        try child.start()
        // Every 10th event (n = 9, 19, ...) is about 1,100 bytes; the others about 40.
        child.feed { chunk in
            let start = chunk * 1000
            guard start < count else { return nil }
            var text = ""
            for n in start..<start + 1000 {
                let pad = n % 10 == 9 ? String(repeating: "x", count: 1100) : ""
                text += #"{"n":\#(n),"key":"k\#(n % 7)","pad":"\#(pad)"}"# + "\n"
            }
            return Data(text.utf8)
        }
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 0)
        let sink = try #require(try pipeline.finalComponent("out"))
        #expect(sink.int("sent_events_total") == count - count / 10)
        #expect(sink.int("discarded_events_total", "error") == count / 10)
        #expect(sink.balances)
        #expect(child.errorText.contains("rejected by librdkafka"))
        let check = try peer.ask("check sized \(count) 5")
        #expect(check["distinct"] as? Int == count - count / 10)
        #expect(check["duplicates"] as? Int == 0)
        #expect(check["order_violations"] as? Int == 0)
        #expect(check["missing"] as? [Int] == Array(stride(from: 9, to: 100, by: 10)))
    }

    /// A message that cannot be delivered (no broker answers the sink) is counted under `error`, and the source
    /// never commits past it: the group's offsets stay where they were, so a restart reads it again.
    @Test func aFailedDeliveryIsCountedAndNothingIsCommittedPastIt() throws {
        let peer = try KafkaPeer()
        defer { peer.stop() }
        try peer.ask("produce in 1000")
        let pipeline = try TemporaryPipeline(
            Self.copyPipeline(
                group: "stuck",
                sink: """
                    type: kafka
                    inputs: [in]
                    bootstrap_servers: 127.0.0.1:1
                    topic: out
                    librdkafka_options: {message.timeout.ms: "1500"}
                    """))
        defer { pipeline.remove() }
        let child = try Self.start(pipeline, peer)
        defer { child.killIfRunning() }
        #expect(pipeline.waitForReport("out") { $0.int("discarded_events_total", "error") == 1000 })
        kill(child.process.processIdentifier, SIGTERM)
        #expect(child.waitForExit() == 0)
        let sink = try #require(try pipeline.finalComponent("out"))
        #expect(sink.int("sent_events_total") == 0)
        #expect(sink.balances)
        #expect(sink["last_error"] != .null)
        #expect(try peer.ask("committed stuck in")["sum"] as? Int == 0, "nothing was finished, so nothing committed")
        #expect(child.errorText.contains("not delivered"))
    }

    /// No broker at all: the source reports it once, retries without spinning, and stops cleanly when asked.
    /// Every broker goes down for four seconds (connections closed, new ones refused) and comes back, under a
    /// running copy: the source and the sink report it a bounded number of times, use little CPU while they
    /// retry, and go on afterwards; nothing is lost, and the group's offsets reach the end.
    @Test func aClusterRestartIsReportedAndSurvived() throws {
        let peer = try KafkaPeer(controllable: true)
        defer { peer.stop() }
        #expect(try peer.ask("produce in 20000")["produced"] as? Int == 20_000)
        let pipeline = try TemporaryPipeline(Self.copyPipeline(group: "restart"))
        defer { pipeline.remove() }
        let child = try Self.start(pipeline, peer)
        defer { child.killIfRunning() }
        #expect(pipeline.waitForReport("out") { $0.int("sent_events_total") == 20_000 })
        #expect(try peer.ask("down")["down"] as? Int == 3)
        let before = child.cpuSeconds ?? 0
        // The errors are reported once the clients notice the brokers are gone.
        #expect(child.waitForErrorText("kafka:", seconds: 20), "\(child.errorText)")
        usleep(4_000_000)
        let used = (child.cpuSeconds ?? 0) - before
        if !underSanitizer { #expect(used < 2, "\(used) s of CPU while the brokers were down") }
        #expect(child.process.isRunning, "a cluster restart does not end the run")
        #expect(try peer.ask("up")["up"] as? Int == 3)
        #expect(try peer.ask("produce in 20000 10 20000")["produced"] as? Int == 20_000)
        let check = try peer.ask("check out 40000 60")
        #expect(check["distinct"] as? Int == 40_000, "\(check)")
        kill(child.process.processIdentifier, SIGTERM)
        #expect(child.waitForExit() == 0, "\(child.errorText)")
        let reports = child.errorText.components(separatedBy: "\n").filter { $0.contains("kafka:") }
        #expect(reports.count <= 20, "reported per change of state, not per retry:\n\(reports.joined(separator: "\n"))")
        #expect(try peer.ask("committed restart in")["sum"] as? Int == 40_000)
        let source = try #require(try pipeline.finalComponent("in"))
        let sink = try #require(try pipeline.finalComponent("out"))
        #expect(source.balances && sink.balances)
        #expect(sink.int("sent_events_total") == source.int("received_events_total"))
        print(
            "kafka restart: \(used) s of CPU in the 4 s down, \(reports.count) reports:\n"
                + reports.joined(separator: "\n"))
    }

    /// librdkafka before 2.3.0 aborts the process when it frees a cooperative-sticky member that joined its group
    /// but was never given an assignment (confluentinc/librdkafka#4312: the assignor's state is still null). A run
    /// stopped in that moment, here made to last by a coordinator that holds back its SyncGroup answer, ends as any
    /// other: exit status 0 and a final report.
    @Test func aRunStoppedBeforeItsFirstAssignmentEndsCleanly() throws {
        let peer = try KafkaPeer(controllable: true)
        defer { peer.stop() }
        #expect(try peer.ask("produce in 100")["produced"] as? Int == 100)
        #expect(try peer.ask("holdsync held 20")["held"] as? Int == 1)
        let pipeline = try TemporaryPipeline(Self.copyPipeline(group: "held", sink: "type: blackhole\ninputs: [in]"))
        defer { pipeline.remove() }
        let child = try Self.start(pipeline, peer)
        defer { child.killIfRunning() }
        // Once the held answer is taken, the member has joined and asked for its assignment.
        let deadline = Date().addingTimeInterval(30)
        while try peer.ask("syncheld")["waiting"] as? Int != 0, Date() < deadline { usleep(100_000) }
        #expect(try peer.ask("syncheld")["waiting"] as? Int == 0, "the member never asked for its assignment")
        kill(child.process.processIdentifier, SIGTERM)
        #expect(child.waitForExit(seconds: 60) == 0, "\(child.errorText)")
        let source = try #require(try pipeline.finalComponent("in"))
        #expect(source.balances)
        #expect(source.int("received_events_total") == 0)
    }

    @Test func anUnreachableClusterIsReportedOnceAndRetriedWithoutSpinning() throws {
        let pipeline = try TemporaryPipeline(
            Self.copyPipeline(group: "nobody", sink: "type: blackhole\ninputs: [in]"))
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path], environment: ["KAFKA_BROKERS": "127.0.0.1:1"])
        defer { child.killIfRunning() }
        try child.start()
        child.feed { _ in nil }
        #expect(child.waitForErrorText("in: kafka:"))
        let before = child.cpuSeconds ?? 0
        usleep(3_000_000)
        let used = (child.cpuSeconds ?? 0) - before
        if !underSanitizer { #expect(used < 0.5, "\(used) s of CPU in 3 s while retrying") }
        #expect(child.process.isRunning, "an unreachable cluster does not end the run")
        kill(child.process.processIdentifier, SIGTERM)
        #expect(child.waitForExit() == 0)
        let reports = child.errorText.components(separatedBy: "\n").filter { $0.contains("in: kafka:") }
        #expect(reports.count <= 3, "reported once per change, not per retry:\n\(reports.joined(separator: "\n"))")
        #expect(try pipeline.finalComponent("in")?["last_error"] != .null)
    }
}
