public import SluiceCore

/// Options of the `simulator` source.
public struct SimulatorSourceConfig: SourceConfig {
    public static let typeName = "simulator"
    public static let summary = "A seeded fleet of moving devices with sensors: location, speed, temperature, battery."

    /// Occasional bad readings, so pipelines meet imperfect data.
    public struct Anomalies: Sendable, Equatable {
        /// The chance that a reading's temperature is far out of range (85 to 150).
        public var spikeProbability = 0.001
        /// The chance that a reading lacks one sensor field.
        public var dropoutProbability = 0.005
    }

    /// One phase of a `load` cycle.
    public struct Phase: Sendable, Equatable {
        public var rate: Double
        public var secs: Double
    }

    /// How many devices take turns to report.
    public var devices = 10
    /// Events per second in total; `nil` for `max`, as fast as the pipeline accepts.
    public var rate: Double? = 10
    /// End after this many events; `nil` runs until stopped.
    public var count: Int?
    /// The seed; `nil` picks one at random and reports it.
    public var seed: UInt64?
    public var centerLat = 52.520008
    public var centerLon = 13.404954
    public var radiusMetres = 5000.0
    /// Epoch milliseconds of the first event's virtual timestamp; `nil` uses the wall clock.
    public var startTimeMillis: Int64?
    public var anomalies = Anomalies()
    /// Rate phases, cycled; when given they replace `rate`.
    public var load: [Phase] = []

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        if let value = options.value("devices")?.int(in: 1...100_000) { devices = value }
        if let node = options.value("rate") {
            if node.isWord("max") {
                rate = nil
            } else if let value = node.double(in: 0.001...10_000_000) {
                rate = value
            }
        }
        if let value = options.value("count")?.int(in: 0...Int.max) { count = value }
        if let value = options.value("seed")?.int(in: 0...Int.max) { seed = UInt64(value) }
        if let center = options.value("center")?.mapping() {
            if let lat = center.value("lat")?.double(in: -85...85) { centerLat = lat }
            if let lon = center.value("lon")?.double(in: -180...180) { centerLon = lon }
            center.finish()
        }
        if let value = options.value("radius_m")?.double(in: 10...1_000_000) { radiusMetres = value }
        if let node = options.value("start_time"), let text = node.string() {
            if let millis = RFC3339.parse(text) {
                startTimeMillis = millis
            } else {
                options.log.error(
                    "'start_time' is not an RFC 3339 time: \(node.shown(text))", at: node.mark,
                    notes: ["for example 2026-11-30T12:00:00Z"])
            }
        }
        if let mapping = options.value("anomalies")?.mapping() {
            if let p = mapping.value("spike_probability")?.double(in: 0...1) { anomalies.spikeProbability = p }
            if let p = mapping.value("dropout_probability")?.double(in: 0...1) { anomalies.dropoutProbability = p }
            mapping.finish()
        }
        if let items = options.value("load")?.list(
            example: "for example 'load: [{rate: 1000, secs: 5}, {rate: 50000, secs: 2}]'")
        {
            for item in items {
                guard let phase = item.mapping() else { continue }
                let rate = phase.required("rate", note: "events per second in this phase")?.double(
                    in: 0.001...10_000_000)
                let secs = phase.required("secs", note: "how long the phase lasts")?.double(in: 0.001...86_400)
                phase.finish()
                if let rate, let secs { load.append(Phase(rate: rate, secs: secs)) }
            }
        }
        try options.validated()
    }

    public func makeSource() -> any Source { SimulatorSource(config: self) }
}
