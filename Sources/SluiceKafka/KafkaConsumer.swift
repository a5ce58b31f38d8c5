internal import CLibRdKafka
internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// A member of a Kafka consumer group, on librdkafka's high-level consumer.
///
/// Only offsets the owner stored are committed: it stores what it has finished with ``store(_:)``, and librdkafka
/// commits them on its timer (`auto.commit.interval.ms`), which waits while the group rebalances; ``commit(_:)``
/// commits at once, for the rebalance handler and the last commit. A commit of the owner's own sent while the group
/// rebalances can be answered "illegal generation", which librdkafka 2.0.2 takes for a lost assignment: it gives up
/// every partition, and their next owners read everything since the last commit again
/// (confluentinc/librdkafka#4059, fixed in 2.8.3).
///
/// ``poll(upTo:timeoutMillis:_:)`` blocks, so all of it runs on one thread of the owner's, never on Swift's
/// cooperative pool; the rebalance and commit handlers run inside `poll` on that thread.
public final class KafkaConsumer: @unchecked Sendable {
    // @unchecked: after init, every method is called from one thread at a time (the owner's poll thread, then the
    // one that closes); librdkafka's own threads reach only `callbacks.events`, whose closures are Sendable.
    // ``wake()`` may come from any thread: it uses `queue` under `wakeable`'s lock, which `close` takes to free it.
    private let handle: OpaquePointer
    private let callbacks: ConsumerCallbacks
    private let queue: OpaquePointer
    private let wakeable = Mutex(true)
    private var closed = false
    /// Topic names by librdkafka's topic handle, so that a message's topic is not made into a String each time.
    private var topicNames: [OpaquePointer: String] = [:]

    /// A change of the partitions this member owns.
    public enum Rebalance: Sendable {
        case assigned([KafkaPartition])
        /// The owner commits what it finished of these before the handler returns; then they are given up.
        case revoked([KafkaPartition])
    }

    /// What a commit did: the offsets committed (the next message to read, per partition), and the error of those
    /// that were not.
    public struct CommitResult: Sendable {
        public var committed: [KafkaPartition: Int64]
        public var error: KafkaError?
    }

    /// Creates the consumer; `settings` must name `bootstrap.servers` and `group.id`. Stored offsets are committed
    /// every `commitIntervalMillis`. It connects in the background and retries for ever; a broker that cannot be
    /// reached is reported through `events`.
    public init(settings: KafkaSettings, commitIntervalMillis: Int, events: KafkaClientEvents) throws(KafkaError) {
        var settings = settings
        // After the user's: at-least-once rests on them.
        settings.entries.append(
            contentsOf: [
                (name: "enable.auto.commit", value: "true"),
                (name: "auto.commit.interval.ms", value: String(commitIntervalMillis)),
                (name: "enable.auto.offset.store", value: "false"),
            ])
        let conf = try settings.makeConf()
        callbacks = ConsumerCallbacks(events: events)
        KafkaClientEvents.install(on: conf, opaque: Unmanaged.passUnretained(callbacks).toOpaque())
        rd_kafka_conf_set_rebalance_cb(conf) { client, code, list, opaque in
            guard let client, let opaque else { return }
            Unmanaged<ConsumerCallbacks>.fromOpaque(opaque).takeUnretainedValue().rebalance(client, code, list)
        }
        rd_kafka_conf_set_offset_commit_cb(conf) { _, code, list, opaque in
            guard let opaque else { return }
            Unmanaged<ConsumerCallbacks>.fromOpaque(opaque).takeUnretainedValue().committed(code, list)
        }
        var message = [CChar](repeating: 0, count: 512)
        guard let handle = rd_kafka_new(RD_KAFKA_CONSUMER, conf, &message, message.count) else {
            rd_kafka_conf_destroy(conf)
            throw KafkaError(text(of: message))
        }
        self.handle = handle
        rd_kafka_poll_set_consumer(handle)
        queue = rd_kafka_queue_get_consumer(handle)
    }

    deinit {
        close()
    }

    /// Joins the group for `topics`; `handler` is told of every change of the assignment, and `onCommit` of every
    /// commit's result (librdkafka's and ``commit(_:)``'s), inside ``poll``.
    public func subscribe(
        _ topics: [String], onRebalance handler: @escaping (Rebalance) -> Void,
        onCommit: @escaping (CommitResult) -> Void
    ) throws(KafkaError) {
        callbacks.handler = handler
        callbacks.commitHandler = onCommit
        let list = makePartitionList(
            topics.map { (KafkaPartition(topic: $0, partition: sluice_rd_kafka_partition_ua), 0) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let code = rd_kafka_subscribe(handle, list)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(code: code) }
    }

    /// Waits up to `timeoutMillis` for messages and shows each of up to `limit` that come to `body`, whose view of
    /// it ends when `body` returns; serves rebalances and callbacks meanwhile. Returns how many messages (and
    /// consumer errors, which are reported) came.
    @discardableResult
    public func poll(upTo limit: Int, timeoutMillis: Int32, _ body: (borrowing KafkaMessage) -> Void) -> Int {
        var count = 0
        while count < limit, let message = rd_kafka_consumer_poll(handle, count == 0 ? timeoutMillis : 0) {
            defer { rd_kafka_message_destroy(message) }
            count += 1
            let fields = message.pointee
            if fields.err != RD_KAFKA_RESP_ERR_NO_ERROR {
                // A consumer error (an unknown topic, a partition gone): reported like the error callback's.
                if fields.err != RD_KAFKA_RESP_ERR__PARTITION_EOF {
                    callbacks.events.error(String(cString: rd_kafka_message_errstr(message)), false)
                }
                continue
            }
            var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
            let timestamp = rd_kafka_message_timestamp(message, &timestampType)
            body(
                KafkaMessage(
                    topic: topicName(fields.rkt), partition: fields.partition, offset: fields.offset,
                    timestampMillis: timestampType == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? nil : timestamp,
                    key: fields.key.map { UnsafeRawBufferPointer(start: $0, count: fields.key_len) },
                    payload: UnsafeRawBufferPointer(
                        start: fields.payload, count: fields.payload == nil ? 0 : fields.len)))
        }
        return count
    }

    /// Makes a ``poll(upTo:timeoutMillis:_:)`` that is waiting return now; from any thread.
    public func wake() {
        wakeable.locked { open in if open { rd_kafka_queue_yield(queue) } }
    }

    private func topicName(_ topic: OpaquePointer?) -> String {
        guard let topic else { return "" }
        if let name = topicNames[topic] { return name }
        let name = String(cString: rd_kafka_topic_name(topic))
        topicNames[topic] = name
        return name
    }

    /// Stores, for each partition owned, the offset of the next message to read (the last finished one + 1), for
    /// librdkafka's next commit; partitions no longer owned are left out.
    public func store(_ offsets: [KafkaPartition: Int64]) {
        guard !offsets.isEmpty else { return }
        let list = makePartitionList(offsets.sorted { $0.key < $1.key })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        _ = rd_kafka_offsets_store(handle, list)
    }

    /// Commits, for each partition, the offset of the next message to read (the last finished one + 1), now; waits
    /// for the broker's answer. Its result also goes to `onCommit`, at a later poll.
    public func commit(_ offsets: [KafkaPartition: Int64]) throws(KafkaError) {
        guard !offsets.isEmpty else { return }
        let list = makePartitionList(offsets.sorted { $0.key < $1.key })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let code = rd_kafka_commit(handle, list, 0)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(code: code) }
    }

    /// The group's committed offset of each of `partitions` that has one, asked of the broker (waiting up to
    /// `timeoutMillis`): where reading a partition just assigned starts.
    public func committedOffsets(_ partitions: [KafkaPartition], timeoutMillis: Int32) -> [KafkaPartition: Int64] {
        guard !partitions.isEmpty else { return [:] }
        let list = makePartitionList(partitions.map { ($0, sluice_rd_kafka_offset_invalid) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        guard rd_kafka_committed(handle, list, timeoutMillis) == RD_KAFKA_RESP_ERR_NO_ERROR else { return [:] }
        return Dictionary(uniqueKeysWithValues: SluiceKafka.partitions(in: list).filter { $0.1 >= 0 })
    }

    /// The partitions this member owns now.
    public func assignment() -> [KafkaPartition] {
        var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
        guard rd_kafka_assignment(handle, &list) == RD_KAFKA_RESP_ERR_NO_ERROR else { return [] }
        defer { if let list { rd_kafka_topic_partition_list_destroy(list) } }
        return partitions(in: list).map(\.0)
    }

    /// Stops fetching from `partitions` (messages already fetched are dropped by librdkafka and fetched again
    /// after ``resume(_:)``), so that memory stays bounded while the pipeline is full.
    public func pause(_ partitions: [KafkaPartition]) {
        guard !partitions.isEmpty else { return }
        let list = makePartitionList(partitions.map { ($0, 0) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        rd_kafka_pause_partitions(handle, list)
    }

    /// Fetches from `partitions` again, from the message after the last one ``poll`` returned.
    public func resume(_ partitions: [KafkaPartition]) {
        guard !partitions.isEmpty else { return }
        let list = makePartitionList(partitions.map { ($0, 0) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        rd_kafka_resume_partitions(handle, list)
    }

    /// The first offset `partition` still holds and its end (the offset the next message written to it will
    /// get), as last seen from the brokers; `nil` before they were asked.
    public func watermarks(_ partition: KafkaPartition) -> (low: Int64, high: Int64)? {
        var low: Int64 = 0
        var high: Int64 = 0
        let code = rd_kafka_get_watermark_offsets(handle, partition.topic, partition.partition, &low, &high)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR, high >= 0 else { return nil }
        return (max(low, 0), high)
    }

    /// Leaves the group (the rebalance handler is told what is revoked, and commits) and frees the client. The
    /// one path that frees it; later calls do nothing.
    public func close() {
        guard !closed else { return }
        closed = true
        wakeable.locked { open in
            open = false
            rd_kafka_queue_destroy(queue)
        }
        var joined = hasMemberID
        rd_kafka_consumer_close(handle)
        joined = joined || hasMemberID
        if joined, !callbacks.assignedOnce, rd_kafka_version() < Self.firstVersionFreeingUnassignedMembers {
            // librdkafka before 2.3.0 aborts the process when it frees a cooperative-sticky member that joined its
            // group but was never given an assignment (confluentinc/librdkafka#4312: the assignor's state is still
            // null). Such a client, closed, is kept until the process ends, with the callbacks its threads may
            // still call: rare (stopped during its first rebalance), and far better than an abort.
            _ = Unmanaged.passRetained(callbacks)
        } else {
            rd_kafka_destroy(handle)
        }
        callbacks.handler = nil
        callbacks.commitHandler = nil
    }

    /// librdkafka 2.3.0 (`rd_kafka_version()`'s encoding), which frees a member never assigned without aborting.
    static let firstVersionFreeingUnassignedMembers: Int32 = 0x0203_00FF

    /// True when the group coordinator has given this member an id: it joined the group, or is joining.
    private var hasMemberID: Bool {
        guard let id = rd_kafka_memberid(handle) else { return false }
        defer { rd_kafka_mem_free(handle, id) }
        return id.pointee != 0
    }
}

/// One message, as ``KafkaConsumer/poll(upTo:timeoutMillis:_:)`` shows it: `key` and `payload` point into librdkafka's
/// memory and are valid only until the poll's closure returns.
public struct KafkaMessage: ~Copyable {
    public let topic: String
    public let partition: Int32
    public let offset: Int64
    /// The message's timestamp (milliseconds since the Unix epoch), when it has one.
    public let timestampMillis: Int64?
    public let key: UnsafeRawBufferPointer?
    public let payload: UnsafeRawBufferPointer
}

private final class ConsumerCallbacks: ClientCallbacks, @unchecked Sendable {
    // @unchecked: `handler` and `commitHandler` are written by the poll thread (subscribe, close) and read in the
    // rebalance and commit callbacks, which librdkafka runs inside `poll` on that same thread; `assignedOnce` is
    // written there and read by `close`, which the owner calls after its last poll.
    var handler: ((KafkaConsumer.Rebalance) -> Void)?
    var commitHandler: ((KafkaConsumer.CommitResult) -> Void)?
    /// True once librdkafka gave this member an assignment (set in the rebalance callback, on the poll thread;
    /// read by `close`, after the last poll).
    var assignedOnce = false

    func rebalance(
        _ client: OpaquePointer, _ code: rd_kafka_resp_err_t,
        _ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
    ) {
        let cooperative = String(cString: rd_kafka_rebalance_protocol(client)) == "COOPERATIVE"
        let changed = partitions(in: list).map(\.0)
        switch code {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            assignedOnce = true
            // librdkafka keeps a partition's pause across its revocation: one paused, taken away and given back
            // would stay paused, though the owner had resumed everything it owned meanwhile. An assigned partition
            // starts unpaused (as in Kafka's Java consumer); the owner pauses it again if it must. Resumed before
            // the assignment: after it, the resume could overtake the fetch start the assignment issues on
            // librdkafka's main thread, which librdkafka 2.0.2 then drops as outdated, and the partition would
            // never be fetched.
            if let list { rd_kafka_resume_partitions(client, list) }
            handler?(.assigned(changed))
            if cooperative {
                if let error = rd_kafka_incremental_assign(client, list) { report(error) }
            } else {
                rd_kafka_assign(client, list)
            }
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
            handler?(.revoked(changed))
            if cooperative {
                if let error = rd_kafka_incremental_unassign(client, list) { report(error) }
            } else {
                rd_kafka_assign(client, nil)
            }
        default:
            events.error("rebalance failed: \(String(cString: rd_kafka_err2str(code)))", false)
            handler?(.revoked(changed))
            rd_kafka_assign(client, nil)
        }
    }

    func committed(_ code: rd_kafka_resp_err_t, _ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?) {
        // Nothing was stored since the last commit: nothing happened.
        guard code != RD_KAFKA_RESP_ERR__NO_OFFSET, let commitHandler else { return }
        var result = KafkaConsumer.CommitResult(
            committed: [:], error: code == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : KafkaError(code: code))
        if let list, let elements = list.pointee.elems {
            for element in UnsafeBufferPointer(start: elements, count: Int(list.pointee.cnt)) {
                guard element.offset >= 0 else { continue }
                if element.err == RD_KAFKA_RESP_ERR_NO_ERROR {
                    result.committed[
                        KafkaPartition(topic: String(cString: element.topic), partition: element.partition)] =
                        element.offset
                } else if result.error == nil {
                    result.error = KafkaError(code: element.err)
                }
            }
        }
        commitHandler(result)
    }

    private func report(_ error: OpaquePointer) {
        events.error(String(cString: rd_kafka_error_string(error)), false)
        rd_kafka_error_destroy(error)
    }
}
