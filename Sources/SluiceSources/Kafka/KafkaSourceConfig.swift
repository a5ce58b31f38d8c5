public import SluiceCore
public import SluiceKafkaClientConfig

/// Options of the `kafka` source.
///
/// ```yaml
/// readings:
///   type: kafka
///   bootstrap_servers: ${KAFKA_BROKERS}
///   topics: [sensor-readings]
///   group_id: sluice-sensors
///   auto_offset_reset: earliest
///   drain_timeout_ms: 5000
///   metadata: {key: _key, partition: _partition, offset: _offset}
/// ```
public struct KafkaSourceConfig: SourceConfig {
    public static let typeName = "kafka"
    public static let summary = "Reads Kafka topics in a consumer group; commits offsets only of finished events."

    /// Where a group with no committed offset for a partition starts reading it.
    public enum OffsetReset: String, ConfigChoice {
        case earliest
        case latest
    }

    /// The message fields copied into each event, and the event field each goes to.
    public struct Metadata: Sendable, Equatable {
        public var key: EventPath?
        public var topic: EventPath?
        public var partition: EventPath?
        public var offset: EventPath?
        public var timestamp: EventPath?

        var isEmpty: Bool { self == Metadata() }
    }

    public var client: KafkaClientConfig
    public var topics: [String] = []
    public var groupID = ""
    public var autoOffsetReset = OffsetReset.latest
    public var decoding = EventDecoding.json
    public var commitIntervalMillis = 1_000
    /// How long a rebalance that takes partitions away waits for the events read from them to be finished, so
    /// that the commit before they go covers them all; 0 gives them up at once (what is in flight is read again
    /// by their next owner). Below the group's session timeout.
    public var drainTimeoutMillis: Int
    public var metadata = Metadata()

    /// librdkafka's default `session.timeout.ms` (2.0.2).
    static let defaultSessionTimeoutMillis = 45_000

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        // At-least-once rests on these: librdkafka commits only offsets whose events are finished.
        let commits = "the source commits offsets only of finished events; commit_interval_ms says how often"
        client = KafkaClientConfig(
            reading: options,
            reserved: [
                "enable.auto.commit": commits, "enable.auto.offset.store": commits, "auto.commit.interval.ms": commits,
            ])
        if let node = options.required("topics", note: "for example topics: [sensor-readings]") {
            topics = node.stringList()?.map(\.0) ?? []
            if topics.isEmpty { options.log.error("'topics' needs at least one topic", at: node.mark) }
        }
        if let node = options.required("group_id", note: "the consumer group the Sluice processes share"),
            let text = node.string()
        {
            groupID = text
            if text.isEmpty { options.log.error("'group_id' must not be empty", at: node.mark) }
        }
        if let value = options.value("auto_offset_reset")?.choice(OffsetReset.self) { autoOffsetReset = value }
        if let value = options.value("decoding")?.choice(EventDecoding.self) { decoding = value }
        if let value = options.value("commit_interval_ms")?.int(in: 10...3_600_000) { commitIntervalMillis = value }
        // The group goes on without a member that has not rejoined within a limit (librdkafka's mock cluster: the
        // session timeout less a second; Kafka: the rebalance timeout, max.poll.interval.ms), and then refuses its
        // commit. Vector bounds its `drain_timeout_ms` by the session timeout too.
        let session =
            client.librdkafkaOptions.last { $0.name == "session.timeout.ms" }.flatMap { Int($0.value) }
            ?? Self.defaultSessionTimeoutMillis
        drainTimeoutMillis = min(5_000, session / 2)
        if let node = options.value("drain_timeout_ms"), let value = node.int(in: 0...3_600_000) {
            if value < session {
                drainTimeoutMillis = value
            } else {
                options.log.error(
                    "'drain_timeout_ms' (\(value)) must be below the session timeout (\(session) ms)", at: node.mark,
                    notes: ["the group goes on without a member that drains too long, and refuses its commit"])
            }
        }
        if let fields = options.value("metadata")?.mapping() {
            func path(_ key: String) -> EventPath? {
                guard let node = fields.value(key), let text = node.string() else { return nil }
                guard let path = EventPath(text) else {
                    options.log.error(
                        "invalid field path '\(text)' for 'metadata.\(key)'", at: node.mark,
                        notes: ["write a field name such as _\(key)"])
                    return nil
                }
                return path
            }
            metadata = Metadata(
                key: path("key"), topic: path("topic"), partition: path("partition"), offset: path("offset"),
                timestamp: path("timestamp"))
            fields.finish()
        }
        try options.validated()
    }

    public func makeSource() -> any Source { KafkaSource(config: self) }
}
