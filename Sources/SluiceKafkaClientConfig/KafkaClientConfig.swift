public import SluiceCore
public import SluiceKafka
internal import SluiceSync
internal import Synchronization

/// The options shared by the `kafka` source and sink: the brokers, and librdkafka settings passed through.
public struct KafkaClientConfig: Sendable {
    /// `host:port[,host:port...]`.
    public var bootstrapServers = ""
    /// librdkafka settings in the order written; they override Sluice's own defaults.
    public var librdkafkaOptions: [(name: String, value: String)] = []

    /// Reads `bootstrap_servers` and `librdkafka_options`; every setting is checked by librdkafka now, so that a
    /// misspelt name or a bad value is a config error at its line, not a failure at start. A setting named in
    /// `reserved` (the client's own, with what to write instead) is an error too.
    public init(reading options: ConfigMapping, reserved: [String: String] = [:]) {
        if let node = options.required("bootstrap_servers", note: "for example bootstrap_servers: localhost:9092"),
            let text = node.string()
        {
            bootstrapServers = text
            if text.split(separator: ",").contains(where: { !$0.contains(":") }) {
                options.log.error(
                    "\(node.shown(text)) is not a list of brokers", at: node.mark,
                    notes: ["write host:port, or several separated by commas"])
            }
        }
        if let mapping = options.value("librdkafka_options")?.mapping() {
            for (key, keyMark, value) in mapping.allEntries(naming: { "'librdkafka_options.\($0)'" }) {
                guard let text = value.string() else { continue }
                if let instead = reserved[key] {
                    options.log.error("'librdkafka_options.\(key)' is Sluice's own", at: keyMark, notes: [instead])
                    continue
                }
                if let problem = KafkaSettings.problem(name: key, value: text) {
                    // librdkafka's message repeats the value, which may be a secret from the environment.
                    options.log.error(
                        value.isFromEnvironment
                            ? "librdkafka does not accept a value from the environment for '\(key)'"
                            : "librdkafka does not accept '\(key)': \(problem)",
                        at: value.isFromEnvironment ? keyMark : value.mark,
                        notes: ["see librdkafka's CONFIGURATION.md for the names and values it knows"])
                    continue
                }
                librdkafkaOptions.append((key, text))
            }
        }
    }

    /// The client's settings: Sluice's `defaults` (for one client kind), then the brokers, then what the user
    /// wrote.
    public func settings(_ defaults: [(name: String, value: String)]) -> KafkaSettings {
        KafkaSettings(defaults + [("bootstrap.servers", bootstrapServers)] + librdkafkaOptions)
    }
}

/// Reports a client's errors once each until it recovers: a broker that stays down is reported when it goes down,
/// not every time librdkafka retries, and `last_error` in the metrics keeps the latest.
public final class KafkaErrorReporter: Sendable {
    private let component: String
    private let log: Logger
    private let state = Mutex<(last: String?, reported: Set<String>)>((nil, []))

    public init(component: String, log: Logger) {
        self.component = component
        self.log = log
    }

    /// The latest error, for `last_error`.
    public var lastError: String? { state.locked { $0.last } }

    /// The events a client built with these reports to.
    public var events: KafkaClientEvents {
        KafkaClientEvents(
            log: { [self] in self.report($0) }, error: { [self] message, fatal in self.report(message, fatal: fatal) })
    }

    public func report(_ message: String, fatal: Bool = false) {
        // librdkafka words a repeat with how long it took and how many it suppressed: "(after 0ms in state
        // CONNECT, 1 identical error(s) suppressed)"; a repeat is the same error without that.
        let kind = message.firstRange(of: " (after ").map { String(message[..<$0.lowerBound]) } ?? message
        let isNew = state.locked { state -> Bool in
            state.last = message
            return state.reported.insert(kind).inserted
        }
        guard isNew || fatal else { return }
        let text = "\(component): kafka: \(message)"
        if fatal { log.error(text) } else { log.warning(text) }
    }

    /// The client works again (messages or deliveries arrive): the next error is news.
    public func recovered() {
        state.locked { $0.reported.removeAll() }
    }
}
