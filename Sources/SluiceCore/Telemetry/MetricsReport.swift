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
    /// Why it is the bottleneck, in words (``Bottleneck/reason``).
    public var bottleneckReason: String?
    /// The process's peak resident memory so far, in bytes.
    public var maxRSSBytes: Int
    /// The reloads of the pipeline file so far; `nil` where reloading is not possible (the library, tests).
    public var reloads: ReloadStatus?

    /// A report of `components` after `uptimeSecs`, with their `rates` (events a second), the `bottleneck` and the process's peak RSS.
    public init(
        final: Bool, uptimeSecs: Double, components: [ComponentSnapshot],
        rates: [String: (received: Double, sent: Double)] = [:], bottleneck: Bottleneck? = nil, maxRSSBytes: Int = 0
    ) {
        self.final = final
        self.uptimeSecs = uptimeSecs
        self.components = components
        self.rates = rates
        self.bottleneck = bottleneck?.id
        self.bottleneckReason = bottleneck?.reason
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
    ) -> Bottleneck? {
        func pressure(_ component: ComponentSnapshot) -> String? {
            guard let buffer = component.buffer else { return nil }
            let before = previous[component.id]
            if component.discarded[.bufferFull] > (before?.discarded[.bufferFull] ?? 0) {
                return "its input buffer is full and drops events (\(buffer.whenFull))"
            }
            if let max = buffer.maxEvents, buffer.events >= max * 9 / 10 {
                return "its input buffer is full (\(buffer.events) of \(max) events)"
            }
            if buffer.blockedSecsTotal > (before?.buffer?.blockedSecsTotal ?? 0) || buffer.producersBlocked > 0 {
                return "its producers wait for room in its input buffer"
            }
            return nil
        }
        let pressed = Dictionary(uniqueKeysWithValues: components.compactMap { c in pressure(c).map { (c.id, $0) } })
        return components.last { component in
            pressed[component.id] != nil && (consumers[component.id] ?? []).allSatisfy { pressed[$0] == nil }
        }.map { Bottleneck(id: $0.id, reason: pressed[$0.id]!) }
    }
}

/// The component holding a pipeline back, and why.
public struct Bottleneck: Sendable, Equatable {
    /// The component that limits the pipeline.
    public var id: String
    /// Why, in words: its input buffer is full, drops events, or makes its producers wait.
    public var reason: String
}
