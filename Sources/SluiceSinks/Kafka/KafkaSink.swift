internal import SluiceCore
internal import SluiceKafka
internal import SluiceKafkaClientConfig
internal import SluiceSync
internal import Synchronization

/// Writes events to Kafka. An event counts as sent when the broker acknowledged it (librdkafka's delivery report),
/// with its latency then; one that fails after librdkafka's retries is discarded under `error`, reported, and stays
/// unfinished for the sources (``SinkContext/held``), so that a source that commits positions never commits past it.
///
/// When librdkafka's queue is full the sink waits for deliveries, so its input buffer's policy decides what
/// happens upstream; memory stays within librdkafka's `queue.buffering.max.*` limits.
struct KafkaSink: Sink {
    let config: KafkaSinkConfig

    /// How long the end of a run waits for the last deliveries before they count as failed.
    static let flushMillis: Int32 = 30_000

    func run(_ input: EventBuffer, _ context: SinkContext) async throws {
        let errors = KafkaErrorReporter(component: context.id, log: context.log)
        let ledger = DeliveryLedger(context: context, errors: errors)
        var settings: [(name: String, value: String)] = [
            ("acks", config.acks.setting), ("compression.codec", config.compression.rawValue),
            // Batches form for up to 5 ms: far more throughput for little latency.
            ("linger.ms", "5"),
        ]
        if config.acks == .all { settings.append(("enable.idempotence", "true")) }
        let producer = try KafkaProducer(
            settings: config.client.settings(settings), events: errors.events,
            onDeliveries: { ledger.settle($0) })
        let queueFullWaits = Atomic<Int>(0)
        context.metrics.provideDetails {
            [
                "last_error": errors.lastError.map { .string($0) } ?? .null,
                "queue_full_waits_total": .int(Int64(queueFullWaits.load(ordering: .relaxed))),
                "partitions_available": .int(Int64(producer.partitionsAvailable)),
            ]
        }
        var encoder = MessageEncoder(config: config, producer: producer)
        var messages = KafkaMessages()
        /// Queues `messages[range]` for `topic`, waiting for deliveries while librdkafka's queue is full.
        func queue(_ messages: KafkaMessages, _ range: Range<Int>, to topic: KafkaTopic) async {
            var start = range.lowerBound
            // A full queue is tried once more at once (a round may have just ended), then after the next round.
            var fullAt: Int?
            while start < range.upperBound {
                let queued = producer.produce(messages, start..<range.upperBound, to: topic)
                for (index, error) in queued.rejected {
                    ledger.settle(messages.token(at: index), outcome: .unsendable("rejected by librdkafka: \(error)"))
                }
                guard let full = queued.queueFullFrom else { break }
                start = full
                if let round = fullAt {
                    queueFullWaits.add(1, ordering: .relaxed)
                    await ledger.waitForRound(after: round)
                    fullAt = nil
                } else {
                    fullAt = ledger.round
                }
            }
        }
        // Each run of messages for one topic (all of them, with a constant topic), by where it ends; topics by
        // their index in the encoder, so that no event retains one.
        var runs: [(topic: Int, end: Int)] = []
        while var batch = await input.next() {
            let sequence = ledger.open(batch)
            var index = 0
            // Lent in place: an event read through the batch's subscript here was copied (a retain and a release).
            batch.forEachInPlace { event in
                let token = DeliveryLedger.token(sequence, index)
                index += 1
                guard let topic = encoder.topic(of: event), encoder.append(event, token: token, to: &messages) else {
                    ledger.settle(token, outcome: .unsendable(encoder.failure))
                    return
                }
                if let last = runs.last, last.topic == topic {
                    runs[runs.count - 1].end = messages.count
                } else {
                    runs.append((topic, messages.count))
                }
            }
            var start = 0
            for run in runs {
                await queue(messages, start..<run.end, to: encoder.topics[run.topic])
                start = run.end
            }
            runs.removeAll(keepingCapacity: true)
            messages.removeAll()
            ledger.closeOpening()
        }
        await ledger.waitUntilSettled()
        await producer.shutDown(flushMillis: Self.flushMillis)
    }
}

/// Turns an event into a message's topic, key and value.
private struct MessageEncoder {
    let config: KafkaSinkConfig
    private let producer: KafkaProducer
    /// Every topic made so far (only the first, with a constant topic), and each one's index by name.
    private(set) var topics: [KafkaTopic] = []
    private var topicIndexes: [String: Int] = [:]
    private let hasConstantTopic: Bool
    private var topicBytes: [UInt8] = []
    private var keyState: ExpressionState?
    /// The message's text, in the sink's `encoding`.
    private var lines: LineFormat.Encoder
    /// Why the last ``topic(of:)`` or ``append(_:token:to:)`` failed.
    private(set) var failure = ""

    init(config: KafkaSinkConfig, producer: KafkaProducer) {
        self.config = config
        self.producer = producer
        if let constant = config.topic.constantText.flatMap({ try? producer.topic($0) }) { topics = [constant] }
        hasConstantTopic = !topics.isEmpty
        keyState = config.key?.makeState()
        lines = config.format.encoder()
    }

    /// The index in ``topics`` of the topic `event` goes to; `nil` (with ``failure``) when its template cannot be
    /// evaluated.
    mutating func topic(of event: Event) -> Int? {
        if hasConstantTopic { return 0 }
        do {
            topicBytes.removeAll(keepingCapacity: true)
            try config.topic.render(event, to: &topicBytes)
            let name = String(decoding: topicBytes, as: UTF8.self)
            if let known = topicIndexes[name] { return known }
            topics.append(try producer.topic(name))
            topicIndexes[name] = topics.count - 1
            return topics.count - 1
        } catch {
            failure = "\(error)"
            return nil
        }
    }

    /// Appends `event`'s key and value to `messages`; `false` (with ``failure``, and nothing appended) when the
    /// key cannot be evaluated or the event encoded.
    mutating func append(_ event: Event, token: UInt, to messages: inout KafkaMessages) -> Bool {
        do {
            try messages.append(token: token) { key in
                guard let expression = config.key else { return false }
                switch try expression.evaluate(event, &keyState!) {
                case .null:
                    return false
                case .string(let text):
                    key.append(contentsOf: text.utf8)
                case let other:
                    JSONWriter.write(other, to: &key)
                }
                return true
            } writeValue: { value in
                try lines.append(event, to: &value)
                value.removeLast()  // the newline a line sink writes
            }
            return true
        } catch {
            failure = "\(error)"
            return false
        }
    }
}

/// The sink's messages between queueing and the broker's answer, by batch; it keeps the sink's counters and its
/// held mark (the earliest ingest time not yet acknowledged, or of a delivery that failed).
///
/// Delivery reports come on the producer's thread, a round of them at a time, settled under one lock.
final class DeliveryLedger: Sendable {
    private let context: SinkContext
    private let errors: KafkaErrorReporter
    private let state = Mutex(State())
    private static let indexBits = 20

    enum Outcome {
        case delivered
        case failed(String)
        /// The event could not be made into a message, or librdkafka refused it: discarded for good, and finished.
        case unsendable(String)
    }

    private struct Batch {
        var ingestNanos: [UInt64]
        var unsettled: Int
        var oldest: UInt64
    }

    private struct State {
        var batches: [Int: Batch] = [:]
        var nextSequence = 0
        /// The sequence of the batch being queued: it is not done before all of it was queued.
        var opening: Int?
        /// The earliest ingest time of a delivery that failed: nothing after it is finished in this run.
        var failedSince = UInt64.max
        var round = 0
        var roundWaiter: (after: Int, continuation: CheckedContinuation<Void, Never>)?
        var settledWaiter: CheckedContinuation<Void, Never>?
        var failureReporter = RateLimitedReporter()

        /// What the sink holds: the earliest ingest time of a batch not yet settled, or of a failed delivery.
        var heldNanos: UInt64 { min(failedSince, batches.values.lazy.map(\.oldest).min() ?? .max) }
    }

    init(context: SinkContext, errors: KafkaErrorReporter) {
        self.context = context
        self.errors = errors
    }

    static func token(_ sequence: Int, _ index: Int) -> UInt { UInt(sequence) << indexBits | UInt(index) }

    /// Starts a batch; it is held until every event of it is settled.
    func open(_ events: [Event]) -> Int {
        precondition(events.count < 1 << Self.indexBits, "A batch is larger than a delivery token can number.")
        let ingest = events.map(\.ingestNanos)
        return state.locked { state in
            let sequence = state.nextSequence
            state.nextSequence += 1
            state.batches[sequence] = Batch(ingestNanos: ingest, unsettled: ingest.count, oldest: ingest.min() ?? .max)
            state.opening = sequence
            context.held.set(state.heldNanos)
            return sequence
        }
    }

    /// The batch being opened is all queued.
    func closeOpening() {
        state.locked { $0.opening = nil }
        settle([])
    }

    /// How many rounds of delivery reports have been settled.
    var round: Int { state.locked { $0.round } }

    /// Waits until a round after `round` was settled (librdkafka's queue had room made in it).
    func waitForRound(after round: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.locked { state -> Bool in
                guard state.round <= round else { return true }
                state.roundWaiter = (round, continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Waits until every message queued has been answered.
    func waitUntilSettled() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.locked { state -> Bool in
                guard !state.batches.isEmpty else { return true }
                state.settledWaiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Settles a round of delivery reports.
    func settle(_ round: [KafkaDelivery]) {
        settle(round.count, endsRound: true) { index in
            (round[index].token, round[index].error.map { .failed($0.description) } ?? .delivered)
        }
    }

    /// Settles one event at once (one that never reached librdkafka).
    func settle(_ token: UInt, outcome: Outcome) {
        settle(1, endsRound: false) { _ in (token, outcome) }
    }

    /// Settles `count` outcomes, `report(0)` to `report(count - 1)`.
    private func settle(_ count: Int, endsRound: Bool, _ report: (Int) -> (token: UInt, outcome: Outcome)) {
        let now = MonotonicClock.nanos()
        var written: [UInt64] = []
        var failed = 0
        var firstFailure: String?
        var unsendable = 0
        var messages: [String] = []
        let resumed = state.locked { state -> [CheckedContinuation<Void, Never>] in
            // The reports of a batch come in runs (one per partition it went to): its entry is taken out of the
            // dictionary once a run, not looked up (and its array retained) once a report.
            var start = 0
            while start < count {
                let sequence = Int(report(start).token >> Self.indexBits)
                var end = start + 1
                while end < count, Int(report(end).token >> Self.indexBits) == sequence { end += 1 }
                defer { start = end }
                guard var batch = state.batches.removeValue(forKey: sequence) else { continue }
                for index in start..<end {
                    let (token, outcome) = report(index)
                    let ingestNanos = batch.ingestNanos[Int(token & (1 << Self.indexBits - 1))]
                    switch outcome {
                    case .delivered:
                        written.append(ingestNanos)
                    case .failed(let message):
                        failed += 1
                        state.failedSince = min(state.failedSince, ingestNanos)
                        firstFailure = firstFailure ?? message
                        messages.append(message)
                    case .unsendable(let message):
                        unsendable += 1
                        messages.append(message)
                    }
                }
                batch.unsettled -= end - start
                state.batches[sequence] = batch
            }
            for (sequence, batch) in state.batches where batch.unsettled == 0 && sequence != state.opening {
                state.batches[sequence] = nil
            }
            context.held.set(state.heldNanos)
            var resumed: [CheckedContinuation<Void, Never>] = []
            if endsRound {
                state.round += 1
                if let waiter = state.roundWaiter.take() { resumed.append(waiter.continuation) }
            }
            if state.batches.isEmpty, let waiter = state.settledWaiter.take() { resumed.append(waiter) }
            for message in messages {
                state.failureReporter.report(to: context.log, now: now) { [id = context.id] in
                    "\(id): a message was not delivered (\(message)); counted under error"
                } summary: { [id = context.id] in
                    "\(id): \($0) more messages were not delivered; see error in the metrics"
                }
            }
            return resumed
        }
        if !written.isEmpty {
            context.metrics.recordWritten(ingestTimes: written, at: now)
            errors.recovered()
        }
        if failed + unsendable > 0 { context.metrics.recordDiscarded(failed + unsendable, cause: .error) }
        if let firstFailure { errors.report("delivery failed: \(firstFailure)") }
        for continuation in resumed { continuation.resume() }
    }
}
