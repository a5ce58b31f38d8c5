internal import CLibRdKafka
internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// A Kafka producer on librdkafka, with a thread of its own that serves delivery reports.
///
/// ``produce(_:_:to:)`` only queues; the broker's answer for every message comes later to `onDeliveries`, on the
/// producer's thread, with the message's token. Call ``produce(_:_:to:)`` from one task at a time.
public final class KafkaProducer: @unchecked Sendable {
    // @unchecked: `handle` is set in init and freed only by the service thread after ``shutDown(flushMillis:)`` has
    // told it to stop, when no produce can follow; librdkafka allows produce and poll from different threads.
    // `topics` is guarded by its mutex. `mainQueue` is yielded only under `serving`'s lock as `stopping` is first
    // set, and freed by the service thread only after it saw `stopping`.
    private let handle: OpaquePointer
    /// The queue `rd_kafka_poll` serves, to wake the service thread from its wait (``shutDown(flushMillis:)``).
    private let mainQueue: OpaquePointer
    private let callbacks: ProducerCallbacks
    private let topics = Mutex<[String: KafkaTopic]>([:])
    private let serving = Mutex<Serving>(Serving())

    private struct Serving {
        var stopping = false
        var flushMillis: Int32 = 0
        var done: CheckedContinuation<Void, Never>?
        var finished = false
    }

    /// What became of the messages ``produce(_:_:to:)`` was given.
    public struct Queued: Sendable {
        /// Messages that cannot be sent at all (too large, an unknown partition), by index; no report will come for
        /// them.
        public var rejected: [(index: Int, error: KafkaError)] = []
        /// librdkafka's queue was full (`queue.buffering.max.messages` or `.kbytes`) from this index on: these
        /// messages and every one after it were not queued; try again after some deliveries.
        public var queueFullFrom: Int?
    }

    /// Creates the producer and starts its thread; `onDeliveries` is given the broker's answers once after each
    /// round of them, every queued message's once. The thread waits for reports up to `pollMillis` at a time (a
    /// stop does not wait for that).
    public init(
        settings: KafkaSettings, events: KafkaClientEvents,
        onDeliveries: @escaping @Sendable (_ round: [KafkaDelivery]) -> Void, pollMillis: Int32 = 100
    ) throws(KafkaError) {
        let conf = try settings.makeConf()
        callbacks = ProducerCallbacks(events: events)
        KafkaClientEvents.install(on: conf, opaque: Unmanaged.passUnretained(callbacks).toOpaque())
        rd_kafka_conf_set_dr_msg_cb(conf) { _, message, opaque in
            guard let message, let opaque else { return }
            // Once a message: no retain of the callbacks, no closure call, a plain value appended.
            Unmanaged<ProducerCallbacks>.fromOpaque(opaque)._withUnsafeGuaranteedRef {
                $0.round.append(
                    KafkaDelivery(token: UInt(bitPattern: message.pointee._private), code: message.pointee.err))
            }
        }
        var message = [CChar](repeating: 0, count: 512)
        guard let handle = rd_kafka_new(RD_KAFKA_PRODUCER, conf, &message, message.count) else {
            rd_kafka_conf_destroy(conf)
            throw KafkaError(text(of: message))
        }
        self.handle = handle
        mainQueue = rd_kafka_queue_get_main(handle)
        let retained = Unmanaged.passRetained(self)
        do {
            try ServiceThread.start { retained.takeRetainedValue().serve(onDeliveries, pollMillis: pollMillis) }
        } catch {
            retained.release()
            rd_kafka_queue_destroy(mainQueue)
            rd_kafka_destroy(handle)
            throw KafkaError(error.message)
        }
    }

    /// The topic named `name`, to produce to; made once per name and kept until the producer shuts down.
    public func topic(_ name: String) throws(KafkaError) -> KafkaTopic {
        let topic = topics.locked { topics -> KafkaTopic? in
            if let existing = topics[name] { return existing }
            guard let made = rd_kafka_topic_new(self.handle, name, nil) else { return nil }
            topics[name] = KafkaTopic(handle: made, name: name)
            return topics[name]
        }
        guard let topic else { throw KafkaError(code: rd_kafka_last_error()) }
        return topic
    }

    /// The partitions of the producer's topics known to have a leader, over all of them.
    public var partitionsAvailable: Int { topics.locked { $0.values.reduce(0) { $0 + $1.availableCount } } }

    /// Queues `messages[range]` for `topic` in one call, in order; copies the bytes. A message with a key goes to
    /// the partition librdkafka's partitioner chooses for the key (the same key, the same partition); the messages
    /// without one go to one partition together, the next available one in turn (see ``KafkaTopic``).
    public func produce(_ messages: KafkaMessages, _ range: Range<Int>, to topic: KafkaTopic) -> Queued {
        let entries = messages.entries[range]
        let unkeyedPartition = topic.nextPartition() ?? sluice_rd_kafka_partition_ua
        return messages.withBytes { bytes -> Queued in
            let base = UnsafeMutableRawPointer(mutating: bytes.baseAddress)
            var batch = entries.map { entry in
                var message = rd_kafka_message_t()
                message.payload = base.map { $0 + entry.valueStart }
                message.len = entry.valueCount
                if entry.keyCount >= 0 {
                    message.key = base.map { $0 + entry.keyStart }
                    message.key_len = entry.keyCount
                    message.partition = sluice_rd_kafka_partition_ua
                } else {
                    message.partition = unkeyedPartition
                }
                message._private = UnsafeMutableRawPointer(bitPattern: entry.token)
                return message
            }
            let flags = sluice_rd_kafka_msg_f_copy | sluice_rd_kafka_msg_f_partition
            let good = rd_kafka_produce_batch(
                topic.handle, sluice_rd_kafka_partition_ua, flags, &batch, Int32(batch.count))
            var queued = Queued()
            guard good < batch.count else { return queued }
            for (offset, message) in batch.enumerated() where message.err != RD_KAFKA_RESP_ERR_NO_ERROR {
                // After the first full queue librdkafka gives every later message the same answer.
                guard message.err != RD_KAFKA_RESP_ERR__QUEUE_FULL else {
                    queued.queueFullFrom = range.lowerBound + offset
                    break
                }
                queued.rejected.append((range.lowerBound + offset, KafkaError(code: message.err)))
            }
            return queued
        }
    }

    /// Stops the service thread once everything queued has been answered or `flushMillis` has passed (what is
    /// left then is reported as failed), and frees the client. The one path that frees it.
    public func shutDown(flushMillis: Int32) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let finishedAlready = serving.locked { serving -> Bool in
                guard !serving.finished else { return true }
                if !serving.stopping {
                    // The thread waits in `rd_kafka_poll` up to `pollMillis`: every run that wrote to Kafka ended
                    // up to that much later. A yield ends the wait now, or the next one if none is under way.
                    rd_kafka_queue_yield(mainQueue)
                }
                serving.stopping = true
                serving.flushMillis = flushMillis
                serving.done = done
                return false
            }
            if finishedAlready { done.resume() }
        }
    }

    private func serve(_ onDeliveries: @Sendable ([KafkaDelivery]) -> Void, pollMillis: Int32) {
        func deliver() {
            onDeliveries(callbacks.round)
            callbacks.round.removeAll(keepingCapacity: true)
        }
        var nextLookUp = ContinuousClock.now
        // The first delivery reports say the cluster answers: the partitions are looked up then, not at the next
        // round, which would leave a run's first tenth of a second to librdkafka's partitioner.
        var awaitingFirstReports = true
        while true {
            let served = rd_kafka_poll(handle, pollMillis)
            let firstReports = awaitingFirstReports && !callbacks.round.isEmpty
            if served > 0 { deliver() }
            let stop = serving.locked { (stopping: $0.stopping, flushMillis: $0.flushMillis) }
            if !stop.stopping, firstReports || ContinuousClock.now >= nextLookUp {
                if firstReports { awaitingFirstReports = false }
                nextLookUp = ContinuousClock.now + (lookUpPartitions() ? .seconds(5) : .milliseconds(100))
            }
            guard !stop.stopping else {
                rd_kafka_flush(handle, stop.flushMillis)
                // Whatever is still queued fails now, with a report each, so that nothing goes uncounted.
                rd_kafka_purge(handle, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
                rd_kafka_poll(handle, 0)
                deliver()
                break
            }
        }
        rd_kafka_queue_destroy(mainQueue)
        for topic in topics.locked({ $0.values }) { rd_kafka_topic_destroy(topic.handle) }
        rd_kafka_destroy(handle)
        let done = serving.locked { serving -> CheckedContinuation<Void, Never>? in
            serving.finished = true
            return serving.done.take()
        }
        done?.resume()
    }

    /// Asks the cluster which partitions of the producer's topics have a leader (one request for them all, waiting
    /// up to half a second) and tells each topic; `false` when that is not known for every topic.
    private func lookUpPartitions() -> Bool {
        let topics = topics.locked { $0 }
        guard !topics.isEmpty else { return false }
        var metadata: UnsafePointer<rd_kafka_metadata>?
        guard rd_kafka_metadata(handle, 0, nil, &metadata, 500) == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
            for topic in topics.values { topic.setPartitions([]) }
            return false
        }
        defer { rd_kafka_metadata_destroy(metadata) }
        var led: [String: [Int32]] = [:]
        for entry in UnsafeBufferPointer(start: metadata.pointee.topics, count: Int(metadata.pointee.topic_cnt))
        where entry.err == RD_KAFKA_RESP_ERR_NO_ERROR {
            let partitions = UnsafeBufferPointer(start: entry.partitions, count: Int(entry.partition_cnt))
            led[String(cString: entry.topic)] =
                partitions.filter { $0.err == RD_KAFKA_RESP_ERR_NO_ERROR && $0.leader >= 0 }.map(\.id)
        }
        for (name, topic) in topics { topic.setPartitions(led[name] ?? []) }
        return topics.keys.allSatisfy { led[$0]?.isEmpty == false }
    }
}

/// A topic of a ``KafkaProducer``, valid until the producer shuts down.
///
/// Messages without a key go to its partitions in turn, each run of them queued together to one partition with a
/// leader, as librdkafka's sticky partitioner would send them, but chosen once a run: that partitioner reads the
/// clock and looks up the partition's leader once a message (about 80 ns of the sink's CPU an event, measured).
/// The producer's thread asks the cluster for the partitions and their leaders every 5 seconds (every 100 ms while
/// some topic's are not known, and at the first delivery reports); until they are (the first moments of a run, a
/// cluster out of reach) librdkafka's partitioner chooses. A partition that loses its leader in between holds its
/// messages until librdkafka finds the new one, as it holds those it had placed there itself.
public final class KafkaTopic: @unchecked Sendable {
    // @unchecked: `handle` is set once; librdkafka allows producing to a topic handle from any thread, and the
    // producer frees it only at shutdown, after the last produce. `turns` is guarded by its mutex.
    fileprivate let handle: OpaquePointer
    public let name: String
    private let turns = Mutex<(partitions: [Int32], next: Int)>(([], 0))

    fileprivate init(handle: OpaquePointer, name: String) {
        self.handle = handle
        self.name = name
    }

    /// The partition for the next run of messages without a key; `nil` while none is known to have a leader.
    fileprivate func nextPartition() -> Int32? {
        turns.locked { turns in
            guard !turns.partitions.isEmpty else { return nil }
            turns.next = (turns.next + 1) % turns.partitions.count
            return turns.partitions[turns.next]
        }
    }

    fileprivate var availableCount: Int { turns.locked { $0.partitions.count } }

    fileprivate func setPartitions(_ partitions: [Int32]) {
        turns.locked { $0.partitions = partitions }
    }
}

/// The broker's answer for one message.
public struct KafkaDelivery: Sendable {
    /// The token the message was queued with.
    public let token: UInt
    private let code: rd_kafka_resp_err_t

    fileprivate init(token: UInt, code: rd_kafka_resp_err_t) {
        self.token = token
        self.code = code
    }

    /// Why the message was not delivered; `nil` when the broker acknowledged it.
    public var error: KafkaError? { code == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : KafkaError(code: code) }
}

private final class ProducerCallbacks: ClientCallbacks, @unchecked Sendable {
    // @unchecked: `round` is touched only by the producer's service thread (the delivery callback runs inside its
    // `rd_kafka_poll`); unchecked exclusivity for the same reason, as it is appended to once a message.
    @exclusivity(unchecked) var round: [KafkaDelivery] = []
}
