#if canImport(Glibc)
    internal import Glibc
#endif

/// One metrics report: every component's counters at one moment, with rates over the interval since the
/// previous report and the component holding the pipeline back, if one is.
public struct MetricsReport: Sendable {
    /// True for the report written once at exit.
    public var final: Bool
    /// Seconds since the pipeline started.
    public var uptimeSecs: Double
    /// The components, in definition order.
    public var components: [ComponentSnapshot]
    /// Events received and sent per second over the last interval, by component id.
    public var rates: [String: (received: Double, sent: Double)]
    /// The id of the component that is holding the pipeline back, if any.
    public var bottleneck: String?
    /// The process's peak resident memory so far, in bytes.
    public var maxRSSBytes: Int

    public init(
        final: Bool, uptimeSecs: Double, components: [ComponentSnapshot],
        rates: [String: (received: Double, sent: Double)] = [:], bottleneck: String? = nil, maxRSSBytes: Int = 0
    ) {
        self.final = final
        self.uptimeSecs = uptimeSecs
        self.components = components
        self.rates = rates
        self.bottleneck = bottleneck
        self.maxRSSBytes = maxRSSBytes
    }

    /// The peak resident memory of this process, in bytes: `VmHWM` from /proc/self/status. (getrusage's
    /// `ru_maxrss` is no good here: Linux carries the parent's peak across fork and exec, so a child of a large
    /// process would report its parent's memory.)
    public static func currentMaxRSSBytes() -> Int {
        let descriptor = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        if descriptor >= 0 {
            defer { close(descriptor) }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = read(descriptor, &buffer, buffer.count)
            if count > 0 {
                for line in String(decoding: buffer[0..<count], as: UTF8.self).split(separator: "\n")
                where line.hasPrefix("VmHWM:") {
                    if let kilobytes = Int(line.dropFirst(6).filter(\.isNumber)) { return kilobytes * 1024 }
                }
            }
        }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss * 1024
    }

    /// The latency figures a report shows for `component`: the last interval's, or the whole run's when final.
    func latency(of component: ComponentSnapshot) -> LatencyHistogram {
        final ? component.totalLatency : component.recentLatency
    }

    /// The component holding the pipeline back: the most downstream one whose input buffer is full or made its
    /// producers wait or drop since `previous`, whose own consumers are not in that state (else they are the
    /// cause). `consumers` maps each id to the ids reading from it.
    static func findBottleneck(
        _ components: [ComponentSnapshot], previous: [String: ComponentSnapshot], consumers: [String: [String]]
    ) -> String? {
        func isPressed(_ component: ComponentSnapshot) -> Bool {
            guard let buffer = component.buffer else { return false }
            let before = previous[component.id]
            let full = buffer.maxEvents.map { buffer.events >= $0 * 9 / 10 } ?? false
            let blocked =
                buffer.blockedSecsTotal > (before?.buffer?.blockedSecsTotal ?? 0) || buffer.producersBlocked > 0
            let dropped = component.discarded[.bufferFull] > (before?.discarded[.bufferFull] ?? 0)
            return full || blocked || dropped
        }
        let pressed = Set(components.filter(isPressed).map(\.id))
        return components.last { component in
            pressed.contains(component.id) && (consumers[component.id] ?? []).allSatisfy { !pressed.contains($0) }
        }?.id
    }
}
