internal import CLibRdKafka

#if canImport(Glibc)
    internal import Glibc
#endif

/// A Kafka client's settings, in librdkafka's names (`bootstrap.servers`, `session.timeout.ms`, ...).
public struct KafkaSettings: Sendable {
    /// The settings in the order they are applied: a later one overrides an earlier one of the same name.
    public var entries: [(name: String, value: String)]

    public init(_ entries: [(name: String, value: String)] = []) {
        self.entries = entries
    }

    /// librdkafka's complaint about one setting (an unknown name, a value out of range), or `nil` when it takes it.
    /// Settings that concern only producers or only consumers are accepted by both here; librdkafka warns about a
    /// misplaced one when the client starts.
    public static func problem(name: String, value: String) -> String? {
        guard let conf = rd_kafka_conf_new() else { return "out of memory" }
        defer { rd_kafka_conf_destroy(conf) }
        return set(conf, name, value)
    }

    /// Makes librdkafka's configuration object; the caller owns it (it passes to `rd_kafka_new`, which takes it on
    /// success, or must destroy it).
    func makeConf() throws(KafkaError) -> OpaquePointer {
        guard let conf = rd_kafka_conf_new() else { throw KafkaError("out of memory") }
        for (name, value) in entries {
            if let problem = Self.set(conf, name, value) {
                rd_kafka_conf_destroy(conf)
                throw KafkaError("setting '\(name)': \(problem)")
            }
        }
        return conf
    }

    private static func set(_ conf: OpaquePointer, _ name: String, _ value: String) -> String? {
        var message = [CChar](repeating: 0, count: 512)
        let result = rd_kafka_conf_set(conf, name, value, &message, message.count)
        guard result != RD_KAFKA_CONF_OK else { return nil }
        return text(of: message)
    }
}

/// What went wrong in a Kafka client, in librdkafka's words.
public struct KafkaError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }

    init(code: rd_kafka_resp_err_t) {
        self.init(String(cString: rd_kafka_err2str(code)))
    }
}

/// One partition of a topic.
public struct KafkaPartition: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let topic: String
    public let partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)/\(partition)" }

    public static func < (lhs: KafkaPartition, rhs: KafkaPartition) -> Bool {
        (lhs.topic, lhs.partition) < (rhs.topic, rhs.partition)
    }
}

/// What a client tells of itself, from librdkafka's threads: its log lines at warning level or worse, and errors
/// (a broker down, all brokers down, an authentication failure). librdkafka retries on its own; a fatal error
/// ends the client's usefulness.
public struct KafkaClientEvents: Sendable {
    public var log: @Sendable (String) -> Void
    public var error: @Sendable (_ message: String, _ fatal: Bool) -> Void

    public init(
        log: @escaping @Sendable (String) -> Void, error: @escaping @Sendable (_ message: String, _ fatal: Bool) -> Void
    ) {
        self.log = log
        self.error = error
    }
}

extension KafkaClientEvents {
    /// Routes librdkafka's log lines and error callbacks to these closures, through `opaque` (which must outlive
    /// the client).
    static func install(on conf: OpaquePointer, opaque: UnsafeMutableRawPointer) {
        rd_kafka_conf_set_opaque(conf, opaque)
        rd_kafka_conf_set(conf, "log_level", "4", nil, 0)
        rd_kafka_conf_set_log_cb(conf) { client, _, facility, text in
            guard let client, let opaque = rd_kafka_opaque(client) else { return }
            let facility = facility.map { String(cString: $0) } ?? "kafka"
            // A FAIL line says again what the error callback says.
            guard facility != "FAIL" else { return }
            let events = Unmanaged<ClientCallbacks>.fromOpaque(opaque).takeUnretainedValue().events
            events.log("\(facility): \(text.map { String(cString: $0) } ?? "")")
        }
        rd_kafka_conf_set_error_cb(conf) { client, code, reason, opaque in
            guard let opaque else { return }
            let events = Unmanaged<ClientCallbacks>.fromOpaque(opaque).takeUnretainedValue().events
            var fatal = false
            var message =
                reason.map { String(cString: $0) } ?? String(cString: rd_kafka_err2str(rd_kafka_resp_err_t(code)))
            if rd_kafka_resp_err_t(code) == RD_KAFKA_RESP_ERR__FATAL, let client {
                var buffer = [CChar](repeating: 0, count: 512)
                rd_kafka_fatal_error(client, &buffer, buffer.count)
                message = text(of: buffer)
                fatal = true
            }
            events.error(message, fatal)
        }
    }
}

/// What librdkafka's callbacks reach through the client's opaque pointer; subclassed by each client for its own.
class ClientCallbacks: @unchecked Sendable {
    // @unchecked: `events` is set once in init; subclasses say what else they hold and who touches it.
    let events: KafkaClientEvents

    init(events: KafkaClientEvents) {
        self.events = events
    }
}

/// A partition list made from Swift values; the caller destroys it.
func makePartitionList(_ offsets: [(KafkaPartition, Int64)]) -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t> {
    let list = rd_kafka_topic_partition_list_new(Int32(offsets.count))!
    for (partition, offset) in offsets {
        let element = rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition)!
        element.pointee.offset = offset
    }
    return list
}

/// The partitions (and offsets) in a list librdkafka made.
func partitions(in list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?) -> [(KafkaPartition, Int64)] {
    guard let list, let elements = list.pointee.elems else { return [] }
    return (0..<Int(list.pointee.cnt)).map { index in
        let element = elements[index]
        return (KafkaPartition(topic: String(cString: element.topic), partition: element.partition), element.offset)
    }
}

/// The text librdkafka wrote into a buffer of ours, up to its terminating zero.
func text(of buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
