internal import SluiceSync
internal import Synchronization

/// Writes a metrics report every interval and once more at exit, computing rates from the previous report.
public final class MetricsReporter: Sendable {
    private let settings: MetricsSettings
    private let components: [ComponentMetrics]
    private let consumers: [String: [String]]
    private let writer: OutputWriter
    private let startNanos: UInt64
    private let previous = Mutex<(nanos: UInt64, snapshots: [String: ComponentSnapshot])>((0, [:]))

    /// Reports on `components` to `writer`; `consumers` maps each id to the ids that read from it.
    public init(
        settings: MetricsSettings, components: [ComponentMetrics], consumers: [String: [String]],
        writer: OutputWriter, startNanos: UInt64 = MonotonicClock.nanos()
    ) {
        self.settings = settings
        self.components = components
        self.consumers = consumers
        self.writer = writer
        self.startNanos = startNanos
        previous.locked { $0.nanos = startNanos }
    }

    /// Reports every interval until the task is cancelled; does nothing when the interval is 0.
    public func runPeriodically() async {
        guard settings.intervalSecs > 0 else { return }
        let interval = Duration.nanoseconds(Int64(settings.intervalSecs * 1e9))
        let clock = ContinuousClock()
        var deadline = clock.now + interval
        while !Task.isCancelled {
            do { try await clock.sleep(until: deadline) } catch { return }
            deadline += interval
            await write(makeReport(final: false))
        }
    }

    /// Builds the next report; rates cover the time since the previous one, and in the final report the whole run
    /// (the last interval is usually a fraction of one, whose rate says little).
    public func makeReport(final: Bool, now: UInt64 = MonotonicClock.nanos()) -> MetricsReport {
        let snapshots = components.map { $0.snapshot() }
        return previous.locked { previous in
            let since = final ? startNanos : previous.nanos
            let seconds = max(1e-9, Double(now &- since) / 1e9)
            var rates: [String: (received: Double, sent: Double)] = [:]
            for snapshot in snapshots {
                let before = final ? nil : previous.snapshots[snapshot.id]
                rates[snapshot.id] = (
                    Double(snapshot.received - (before?.received ?? 0)) / seconds,
                    Double(snapshot.sent - (before?.sent ?? 0)) / seconds
                )
            }
            let bottleneck = MetricsReport.findBottleneck(
                snapshots, previous: previous.snapshots, consumers: consumers)
            previous = (now, Dictionary(snapshots.map { ($0.id, $0) }, uniquingKeysWith: { $1 }))
            return MetricsReport(
                final: final, uptimeSecs: Double(now &- startNanos) / 1e9, components: snapshots, rates: rates,
                bottleneck: final ? nil : bottleneck, maxRSSBytes: MetricsReport.currentMaxRSSBytes())
        }
    }

    /// Writes `report`; a closed output is ignored, because the pipeline is already stopping then.
    public func write(_ report: MetricsReport) async {
        try? await writer.write(Array(MetricsFormatter.render(report, as: settings.format).utf8))
    }
}
