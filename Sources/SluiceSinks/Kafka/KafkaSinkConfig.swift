public import SluiceCore
internal import SluiceKafka
public import SluiceKafkaClientConfig

/// Options of the `kafka` sink.
///
/// ```yaml
/// alerts:
///   type: kafka
///   inputs: [hot]
///   bootstrap_servers: ${KAFKA_BROKERS}
///   topic: "alerts-{.region}"
///   key: .device
/// ```
public struct KafkaSinkConfig: SinkConfig {
    public static let typeName = "kafka"
    public static let summary = "Writes events to Kafka; an event is sent once the broker has acknowledged it."

    /// Which acknowledgement the producer waits for.
    public enum Acks: String, ConfigChoice {
        /// Every in-sync replica; the producer is idempotent (no duplicates from its own retries, order kept).
        case all
        /// The partition leader only.
        case leader
        /// None: sent as soon as it is on the wire.
        case none

        var setting: String {
            switch self {
            case .all: "all"
            case .leader: "1"
            case .none: "0"
            }
        }
    }

    public enum Compression: String, ConfigChoice {
        case none, gzip, snappy, lz4, zstd
    }

    public var client: KafkaClientConfig
    /// The topic of each event; a template such as `alerts-{.region}` picks it per event.
    public var topic: Template
    /// The message key: events with the same key go to the same partition, in order.
    public var key: Expression?
    public var format: LineFormat
    public var acks = Acks.all
    public var compression = Compression.none

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        client = KafkaClientConfig(reading: options)
        var topic: Template?
        if let node = options.required("topic", note: "for example topic: sensor-alerts, or alerts-{.region}"),
            let template = node.template()
        {
            topic = template
            if template.constantText == "" { options.log.error("'topic' must not be empty", at: node.mark) }
        }
        key = options.value("key")?.expression()
        if let value = options.value("acks")?.choice(Acks.self) { acks = value }
        if let node = options.value("compression"), let value = node.choice(Compression.self) {
            compression = value
            if let problem = KafkaSettings.problem(name: "compression.codec", value: value.rawValue) {
                options.log.error("this librdkafka cannot compress with \(value.rawValue): \(problem)", at: node.mark)
            }
        }
        format = try LineFormat(reading: options)
        self.topic = try options.validated(topic)
    }

    public func makeSink() -> any Sink { KafkaSink(config: self) }
}
