internal import SluiceCore
internal import SluiceKafka
internal import SluiceKafkaClientConfig
internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// Reads Kafka topics as a member of a consumer group, with at-least-once delivery.
///
/// A thread of its own polls librdkafka (which blocks), decodes messages into batches of up to 1,000 events and
/// hands them to the source's task, which sends them on. Offsets are committed only for finished events
/// (``SourceContext/finishedBefore``: written by every sink they reached, or discarded on purpose), in order per
/// partition, every `commit_interval_ms`, before a partition is given up in a rebalance, and once the pipeline
/// has drained. A crash repeats what was not committed; it loses nothing.
///
/// While two batches wait for the task (the pipeline pushes back), the thread stops reading; librdkafka fetches
/// ahead only up to `queued.max.messages.kbytes`, so memory stays bounded. When the task has taken none for
/// ``pauseAfterNanos``, the thread pauses every partition it owns and polls on (serving rebalances and the poll
/// interval the group demands); it resumes when the task takes one. Not pausing at once matters: librdkafka drops
/// what it fetched ahead of a partition when the partition is paused and fetches it again on resume.
///
/// librdkafka 2.0.2 can lose a pause, a resume or the start of a partition's fetch: each takes a version number on
/// the calling thread and is queued after, and one queued behind a newer one from another thread is dropped as
/// outdated. A resume of the thread's, overtaken by librdkafka's own pause as a rebalance began, left a partition
/// paused for good; a resume right after an assignment, overtaking the fetch start the assignment issued, left a
/// partition never fetched. So a partition given to the source is resumed before it is assigned (in
/// ``KafkaConsumer``), and after every rebalance (each begins with that pause and calls back into the thread) the
/// thread resumes again, when it is not paused, the partitions it has read from since they were assigned: their
/// fetch has started, so nothing of it can be overtaken. A resume of a partition that is not paused makes
/// librdkafka fetch again from where it was last paused; messages below what the thread read of a partition since
/// it was assigned are skipped, so nothing comes out twice.
///
/// When a rebalance takes partitions away, the thread waits (up to `drain_timeout_ms`, inside librdkafka's rebalance
/// callback) until every event read from them is finished, then commits: their next owner reads none of them again.
///
/// When a reload gives it new options, it stops fetching, waits (up to ``handOverWait``) until what it sent is
/// finished, commits and leaves the group before the next instance joins it with the new options: that one goes
/// on from the committed offsets, and only events still unfinished after the wait are read again.
final class KafkaSource: Source {
    let config: KafkaSourceConfig
    /// The running reader, handed from `run` to `pipelineEnded`.
    private let reader = Mutex<KafkaReader?>(nil)

    init(config: KafkaSourceConfig) {
        self.config = config
    }

    /// How long the poll thread waits for the pipeline to take a batch before it pauses the partitions.
    static let pauseAfterNanos: UInt64 = 500_000_000

    /// How long a replaced instance waits for what it sent to be finished before it commits and leaves.
    static let handOverWait = Duration.seconds(10)

    func run(_ context: SourceContext) async throws {
        let reader = try KafkaReader(config: config, context: context)
        try reader.start()
        self.reader.locked { $0 = reader }
        var lastSent: UInt64 = 0
        while let batch = await reader.handOff.next() {
            await context.output.send(batch.events)
            lastSent = MonotonicClock.nanos()
            reader.sent(batch.positions, madeBefore: lastSent)
        }
        guard context.handOver.isWanted, let reader = self.reader.locked({ $0.take() }) else { return }
        let deadline = ContinuousClock.now + Self.handOverWait
        while context.finishedBefore() <= lastSent, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        await reader.close()
    }

    /// Commits what is finished and leaves the group.
    func pipelineEnded() async {
        guard let reader = reader.locked({ $0.take() }) else { return }
        await reader.close()
    }
}

/// One batch from the poll thread: its events, and for each partition the offset after its last message.
struct KafkaBatch: Sendable {
    var events: [Event] = []
    var positions: [KafkaPartition: Int64] = [:]
}

/// The consumer, its poll thread, and what the thread shares with the source's task.
final class KafkaReader: Sendable {
    let handOff: BatchHandOff<KafkaBatch>
    private let consumer: KafkaConsumer
    private let config: KafkaSourceConfig
    private let context: SourceContext
    private let errors: KafkaErrorReporter
    private let shared = Locked(Shared())

    /// What the poll thread and the source's task both touch.
    private struct Shared {
        /// Positions sent, waiting for their events to finish.
        var pending = PendingPositions<KafkaPartition, Int64>()
        /// The partitions owned now; positions of others are not recorded or committed.
        var assigned: Set<KafkaPartition> = []
        /// Batches from the hand-off the task has sent on.
        var sends = 0
        /// Set by `close`: the pipeline has drained; the thread commits and leaves the group.
        var closing: CheckedContinuation<Void, Never>?
        var figures = JSONObject()

        func owned(_ positions: [KafkaPartition: Int64]) -> [KafkaPartition: Int64] {
            positions.filter { assigned.contains($0.key) }
        }
    }

    init(config: KafkaSourceConfig, context: SourceContext) throws(KafkaError) {
        self.config = config
        self.context = context
        errors = KafkaErrorReporter(component: context.id, log: context.log)
        consumer = try KafkaConsumer(
            settings: config.client.settings([
                ("group.id", config.groupID),
                ("auto.offset.reset", config.autoOffsetReset.rawValue),
                // Partitions move one at a time in a rebalance instead of all stopping.
                ("partition.assignment.strategy", "cooperative-sticky"),
                // What librdkafka fetches ahead (into the consumer queue, all partitions together): bounded, so
                // that a pipeline that pushes back holds little.
                ("queued.max.messages.kbytes", "8192"),
                // With statistics on, librdkafka asks the brokers for each partition's end every second, paused
                // ones included, so that the lag keeps growing in the metrics while the pipeline pushes back.
                ("statistics.interval.ms", "1000"),
            ]), commitIntervalMillis: config.commitIntervalMillis, events: errors.events)
        let consumer = consumer
        let handOff = BatchHandOff<KafkaBatch>(capacity: 2) { consumer.wake() }
        self.handOff = handOff
        context.stop.onStop {
            handOff.endWaits()
            consumer.wake()
        }
        context.metrics.provideDetails { [shared] in shared.locked { $0.figures } }
    }

    func start() throws(ServiceThreadError) {
        try ServiceThread.start { [self] in serve() }
    }

    /// Records that a batch from the hand-off was sent, so that its positions commit once its events are finished.
    func sent(_ positions: [KafkaPartition: Int64], madeBefore: UInt64) {
        shared.locked { shared in
            shared.sends += 1
            shared.pending.record(shared.owned(positions), madeBefore: madeBefore)
        }
    }

    /// Records positions whose messages made no event (every one invalid): finished once everything before is.
    private func finishedUnsent(_ positions: [KafkaPartition: Int64]) {
        let now = MonotonicClock.nanos()
        shared.locked { $0.pending.record($0.owned(positions), madeBefore: now) }
    }

    /// Tells the thread that the pipeline drained; returns once it has committed and left the group.
    func close() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            shared.locked { $0.closing = done }
            consumer.wake()
        }
    }

    // MARK: - The poll thread

    private func serve() {
        let loop = PollLoop(reader: self)
        do {
            try consumer.subscribe(config.topics) { change in
                loop.rebalance(change)
            } onCommit: { result in
                loop.committed(result)
            }
        } catch {
            errors.report("cannot subscribe to \(config.topics.joined(separator: ", ")): \(error)", fatal: true)
        }
        while !context.stop.isStopped {
            loop.adjustPause()
            loop.readBatch()
            loop.storeFinished()
            loop.publishIfDue()
        }
        // Stopping: nothing more is fetched; what was sent drains, and the group membership stays alive (and
        // commits go on) until the pipeline has drained.
        loop.pauseAll()
        handOff.finish()
        var closing = shared.locked { $0.closing }
        while closing == nil {
            // A message that still comes is not read: its offset is never committed, so it is read again.
            consumer.poll(upTo: 1, timeoutMillis: 100) { _ in }
            if loop.assignmentChanged { loop.pauseAll() }
            loop.storeFinished()
            loop.publishIfDue()
            closing = shared.locked { $0.closing }
        }
        // After the drain every event sent is finished, unless a component failed or a delivery did. A commit
        // refused during a rebalance is tried again (for up to 3 s) while polling serves the rebalance.
        var attempts = 0
        loop.storeFinished()
        while !loop.commitFinished(), attempts < 30 {
            consumer.poll(upTo: 1, timeoutMillis: 100) { _ in }
            attempts += 1
        }
        // Serves the commit's report (commits_total).
        consumer.poll(upTo: 1, timeoutMillis: 0) { _ in }
        // The final report keeps the partitions as they were at the end, not as leaving the group empties them.
        loop.publish()
        loop.leaving = true
        consumer.close()
        closing?.resume()
    }

    /// The poll thread's own state; touched by that thread only (the rebalance handler runs inside its polls).
    private final class PollLoop {
        let reader: KafkaReader
        var consumer: KafkaConsumer { reader.consumer }
        var scanner = CanonicalJSONScanner()
        var parseErrors = RateLimitedReporter()
        var paused = false
        /// Set while the consumer leaves the group: the figures are no longer published.
        var leaving = false
        /// How many times the pipeline's backpressure paused the partitions.
        var pauses = 0
        var assignmentChanged = false
        /// Per partition: the offset after the last message read, after the last finished one (stored for
        /// librdkafka's commits), and the last committed.
        var readThrough: [KafkaPartition: Int64] = [:]
        var finished: [KafkaPartition: Int64] = [:]
        var committed: [KafkaPartition: Int64] = [:]
        /// Partitions assigned whose committed offset was asked of the broker since.
        var committedAsked: Set<KafkaPartition> = []
        var rebalances = 0
        var commits = 0
        /// Batches put into the hand-off.
        var handedOff = 0
        /// True while a rebalance waits for the events of the partitions it takes away.
        var draining = false
        var drainTimeouts = 0
        var nextPublishNanos: UInt64 = 0

        init(reader: KafkaReader) {
            self.reader = reader
        }

        /// Waits a while for room when the task has two batches waiting, then pauses every owned partition; resumes
        /// when the task took one.
        func adjustPause() {
            let full =
                paused ? reader.handOff.isFull : !reader.handOff.waitForRoom(upToNanos: KafkaSource.pauseAfterNanos)
            if full, !paused || assignmentChanged {
                if !paused { pauses += 1 }
                pauseAll()
            } else if !full, paused {
                consumer.resume(consumer.assignment())
                paused = false
            } else if !full, assignmentChanged {
                // After a rebalance, a resume of the thread's may have been lost (see the type's notes).
                consumer.resume(Array(readThrough.keys))
            }
            assignmentChanged = false
        }

        /// Pauses every partition owned now (newly assigned ones too).
        func pauseAll() {
            consumer.pause(consumer.assignment())
            paused = true
            assignmentChanged = false
        }

        /// Polls up to a batch of messages (waiting up to 100 ms for the first ones) and hands them on.
        func readBatch() {
            var batch = KafkaBatch()
            var received = 0
            var discards = DiscardCounts()
            let now = MonotonicClock.nanos()
            let decoding = reader.config.decoding
            let metadata = reader.config.metadata
            // The partition of the last message, so that a run of messages from one partition costs one update:
            // `next` starts where the thread has read the partition up to since it was assigned (`start`), and a
            // message below it was fetched again (see the type's notes) and is skipped.
            var run: (partition: KafkaPartition, next: Int64, start: Int64)?
            var spare = SpareTexts()
            while received < EventBuffer.batchEvents {
                let polled = consumer.poll(
                    upTo: EventBuffer.batchEvents - received, timeoutMillis: received == 0 ? 100 : 0
                ) { message in
                    if run == nil || run!.partition.partition != message.partition
                        || run!.partition.topic != message.topic
                    {
                        if let run, run.next > run.start { batch.positions[run.partition] = run.next }
                        let partition = KafkaPartition(topic: message.topic, partition: message.partition)
                        let start = max(batch.positions[partition] ?? .min, readThrough[partition] ?? .min)
                        run = (partition, start, start)
                    }
                    guard message.offset >= run!.next else { return }
                    run!.next = message.offset + 1
                    received += 1
                    var event: Event
                    do {
                        event = try decoding.decodeEvent(
                            message.payload.assumingMemoryBound(to: UInt8.self), scanner: &scanner, ingestNanos: now,
                            reusing: &spare)
                    } catch {
                        discards[.parseError] += 1
                        let (id, where_) = (
                            reader.context.id, "\(message.topic)/\(message.partition)@\(message.offset)"
                        )
                        parseErrors.report(to: reader.context.log, now: now) {
                            "\(id): the message at \(where_) is not valid JSON (\(error)); counted under parse_error"
                        } summary: {
                            "\(id): \($0) more messages were not valid JSON; see parse_error in the metrics"
                        }
                        return
                    }
                    if !metadata.isEmpty { Self.add(metadata, of: message, to: &event) }
                    batch.events.append(event)
                }
                if polled == 0 { break }
            }
            spare.finish()
            if let run, run.next > run.start { batch.positions[run.partition] = run.next }
            guard received > 0 else { return }
            reader.errors.recovered()
            readThrough.merge(batch.positions) { max($0, $1) }
            reader.context.metrics.recordReceived(received)
            reader.context.metrics.recordDiscarded(discards)
            if batch.events.isEmpty {
                // Every message was bad: nothing to send, and their offsets are finished now.
                reader.finishedUnsent(batch.positions)
            } else {
                handedOff += 1
                reader.handOff.put(batch)
            }
        }

        private static func add(
            _ metadata: KafkaSourceConfig.Metadata, of message: borrowing KafkaMessage, to event: inout Event
        ) {
            // A value that is not an object has no fields to add to: it goes on as it came.
            if let path = metadata.key {
                let key = message.key.map { JSONValue.string(String(decoding: $0, as: UTF8.self)) } ?? .null
                try? event.set(path, to: key)
            }
            if let path = metadata.topic { try? event.set(path, to: .string(message.topic)) }
            if let path = metadata.partition { try? event.set(path, to: .int(Int64(message.partition))) }
            if let path = metadata.offset { try? event.set(path, to: .int(message.offset)) }
            if let path = metadata.timestamp {
                try? event.set(path, to: message.timestampMillis.map { .int($0) } ?? .null)
            }
        }

        /// Stores the offsets whose events are all finished, for librdkafka's next commit (every
        /// `commit_interval_ms`, unless the group rebalances).
        func storeFinished() {
            let finishedBefore = reader.context.finishedBefore()
            let newly = reader.shared.locked { $0.owned($0.pending.takeFinished(before: finishedBefore)) }
            guard !newly.isEmpty else { return }
            finished.merge(newly) { max($0, $1) }
            consumer.store(newly)
        }

        /// Publishes the figures once a second, from the poll loop (never inside a rebalance callback: asking the
        /// broker for committed offsets waits for its answer).
        func publishIfDue() {
            let now = MonotonicClock.nanos()
            guard now >= nextPublishNanos else { return }
            askCommittedOffsets()
            publish()
            nextPublishNanos = now + 1_000_000_000
        }

        /// Asks the broker for the committed offsets of the partitions assigned since the last ask, of which
        /// nothing was read yet: the lag of a partition given back with nothing new to read would otherwise count
        /// from where `auto_offset_reset` starts.
        private func askCommittedOffsets() {
            let unknown = reader.shared.locked { $0.assigned }.filter {
                readThrough[$0] == nil && committed[$0] == nil && !committedAsked.contains($0)
            }
            guard !unknown.isEmpty else { return }
            committedAsked.formUnion(unknown)
            committed.merge(consumer.committedOffsets(Array(unknown), timeoutMillis: 1_000)) { max($0, $1) }
        }

        /// Commits now what is finished and not yet committed, of `partitions` (all when `nil`); false when the
        /// broker refused.
        @discardableResult
        func commitFinished(of partitions: Set<KafkaPartition>? = nil) -> Bool {
            let changed = finished.filter { committed[$0.key] != $0.value && partitions?.contains($0.key) ?? true }
            guard !changed.isEmpty else { return true }
            do {
                try consumer.commit(changed)
                committed.merge(changed) { $1 }
                return true
            } catch {
                reader.errors.report("commit failed: \(error)")
                return false
            }
        }

        /// A commit's result, librdkafka's own or ours.
        func committed(_ result: KafkaConsumer.CommitResult) {
            if !result.committed.isEmpty {
                commits += 1
                let owned = reader.shared.locked { $0.assigned }
                committed.merge(result.committed.filter { owned.contains($0.key) }) { max($0, $1) }
            }
            // librdkafka commits what is stored and not yet committed again at its next turn.
            if let error = result.error { reader.errors.report("commit failed (tried again): \(error)") }
        }

        func rebalance(_ change: KafkaConsumer.Rebalance) {
            rebalances += 1
            // Whatever changed, librdkafka paused every partition as the rebalance began, and a pause or resume of
            // the thread's own at that moment may have been lost (see the type's notes): the next turn says again.
            assignmentChanged = true
            switch change {
            case .assigned(let partitions):
                reader.shared.locked { $0.assigned.formUnion(partitions) }
            case .revoked(let partitions):
                // What is finished of them is committed before they go to another member; what is still in
                // flight after the drain will be read again there (at least once). Leaving, the pipeline has
                // drained already.
                let gone = Set(partitions)
                if !leaving {
                    drain(gone)
                    storeFinished()
                    commitFinished(of: gone)
                }
                reader.shared.locked { shared in
                    shared.assigned.subtract(gone)
                    shared.pending.forget { gone.contains($0) }
                }
                guard !leaving else { return }
                for partition in gone {
                    readThrough[partition] = nil
                    finished[partition] = nil
                    committed[partition] = nil
                    committedAsked.remove(partition)
                }
            }
            publish()
        }

        /// Waits, up to `drain_timeout_ms`, for the events read from `partitions` to be finished: the batches in
        /// the hand-off sent on, and the last send holding any of them finished. Runs inside the rebalance
        /// callback, so nothing is read meanwhile; the pipeline goes on draining.
        private func drain(_ partitions: Set<KafkaPartition>) {
            let timeout = UInt64(reader.config.drainTimeoutMillis) * 1_000_000
            guard timeout > 0 else { return }
            let deadline = MonotonicClock.nanos() + timeout
            draining = true
            publish()
            defer { draining = false }
            while true {
                let handedOff = handedOff
                let (allSent, last) = reader.shared.locked { shared in
                    (shared.sends == handedOff, shared.pending.lastMadeBefore(where: partitions.contains))
                }
                if allSent, last.map({ $0 < reader.context.finishedBefore() }) ?? true { return }
                guard MonotonicClock.nanos() < deadline else {
                    drainTimeouts += 1
                    reader.context.log.warning(
                        "\(reader.context.id): \(partitions.count) partition(s) given up in a rebalance with events "
                            + "still unfinished after drain_timeout_ms (\(reader.config.drainTimeoutMillis)): their "
                            + "next owner reads those again")
                    return
                }
                // A rebalance is rare and the wait short: a check every 2 ms costs nothing worth a signal.
                usleep(2_000)
            }
        }

        /// Writes the figures the metrics report: per partition and in total.
        func publish() {
            let assigned = reader.shared.locked { $0.assigned }.sorted()
            var partitions = JSONObject()
            var totalLag: Int64 = 0
            for partition in assigned {
                var figures = JSONObject()
                let position = readThrough[partition] ?? committed[partition]
                if let (low, high) = consumer.watermarks(partition) {
                    // Nothing read or committed yet: the group starts where auto_offset_reset says.
                    let start = position ?? (reader.config.autoOffsetReset == .earliest ? low : high)
                    figures["consumer_lag"] = .int(max(0, high - start))
                    totalLag += max(0, high - start)
                }
                figures["position"] = position.map { .int($0) } ?? .null
                figures["committed_offset"] = committed[partition].map { .int($0) } ?? .null
                partitions[partition.description] = .object(figures)
            }
            let details: JSONObject = [
                "consumer_lag": .int(totalLag), "partitions_assigned": .int(Int64(assigned.count)),
                "rebalances_total": .int(Int64(rebalances)), "commits_total": .int(Int64(commits)),
                "paused": .bool(paused), "pauses_total": .int(Int64(pauses)),
                "draining": .bool(draining), "drain_timeouts_total": .int(Int64(drainTimeouts)),
                "last_error": reader.errors.lastError.map { .string($0) } ?? .null,
                "partitions": .object(partitions),
            ]
            reader.shared.locked { $0.figures = details }
        }
    }
}
