internal import SluiceSync
internal import Synchronization

/// Writes a metrics report every interval and once more at exit, computing rates from the previous report.
///
/// An observer (the HTTP API) gets a report every second, whatever the written interval is, with rates over its
/// own second: the two series keep separate windows, so neither changes the other's rates.
public final class MetricsReporter: Sendable {
    private let settings: MetricsSettings
    private let components: @Sendable () -> [ComponentMetrics]
    private let consumers: @Sendable () -> [String: [String]]
    private let writer: OutputWriter
    private let startNanos: UInt64
    private let observer: (@Sendable (MetricsReport) -> Void)?
    private let reloads: (@Sendable () -> ReloadStatus)?
    /// The previous written report's time and counters, which the next one's rates start from.
    private let written: Mutex<Window>
    /// The same for the observer's reports.
    private let observed: Mutex<Window>

    private struct Window {
        var nanos: UInt64
        var snapshots: [String: ComponentSnapshot] = [:]
    }

    /// Seconds between the observer's reports.
    public static let observerIntervalSecs = 1.0

    /// Reports on `components` to `writer`; `consumers` maps each id to the ids that read from it. `observer`, when
    /// given, sees a report every second and the final one.
    public convenience init(
        settings: MetricsSettings, components: [ComponentMetrics], consumers: [String: [String]],
        writer: OutputWriter, startNanos: UInt64 = MonotonicClock.nanos(),
        observer: (@Sendable (MetricsReport) -> Void)? = nil
    ) {
        self.init(
            settings: settings, currentComponents: { components }, currentConsumers: { consumers }, writer: writer,
            startNanos: startNanos, observer: observer)
    }

    /// Reports on the components `currentComponents` gives at each report (a reload adds and removes some), read
    /// by `currentConsumers`, to `writer`; `reloads`, when given, says how reloads went.
    public init(
        settings: MetricsSettings, currentComponents components: @escaping @Sendable () -> [ComponentMetrics],
        currentConsumers consumers: @escaping @Sendable () -> [String: [String]], writer: OutputWriter,
        startNanos: UInt64 = MonotonicClock.nanos(), observer: (@Sendable (MetricsReport) -> Void)? = nil,
        reloads: (@Sendable () -> ReloadStatus)? = nil
    ) {
        self.settings = settings
        self.observer = observer
        self.reloads = reloads
        self.components = components
        self.consumers = consumers
        self.writer = writer
        self.startNanos = startNanos
        written = Mutex(Window(nanos: startNanos))
        observed = Mutex(Window(nanos: startNanos))
    }

    /// Reports every interval until the task is cancelled: written ones when the interval is above 0, the
    /// observer's every second.
    public func runPeriodically() async {
        await withTaskGroup(of: Void.self) { group in
            if settings.intervalSecs > 0 {
                group.addTask {
                    await Self.every(self.settings.intervalSecs) {
                        await self.write(self.makeReport(final: false))
                    }
                }
            }
            if let observer {
                group.addTask {
                    await Self.every(Self.observerIntervalSecs) {
                        observer(self.makeReport(final: false, now: MonotonicClock.nanos(), window: self.observed))
                    }
                }
            }
        }
    }

    /// Runs `body` every `seconds` (on a fixed schedule, so that the intervals do not drift) until cancelled.
    private static func every(_ seconds: Double, _ body: @Sendable () async -> Void) async {
        let interval = Duration.nanoseconds(Int64(seconds * 1e9))
        let clock = ContinuousClock()
        var deadline = clock.now + interval
        while !Task.isCancelled {
            do { try await clock.sleep(until: deadline) } catch { return }
            deadline += interval
            await body()
        }
    }

    /// A report now for the observer's series, with rates since its last report, that leaves the next one's rates
    /// as they would be: what the API serves before its first second has passed.
    public func peekReport(now: UInt64 = MonotonicClock.nanos()) -> MetricsReport {
        makeReport(final: false, now: now, window: observed, advancing: false)
    }

    /// Builds the next written report; rates cover the time since the previous one, and in the final report the
    /// whole run (the last interval is usually a fraction of one, whose rate says little).
    public func makeReport(final: Bool, now: UInt64 = MonotonicClock.nanos()) -> MetricsReport {
        makeReport(final: final, now: now, window: written)
    }

    private func makeReport(final: Bool, now: UInt64, window: borrowing Mutex<Window>, advancing: Bool = true)
        -> MetricsReport
    {
        let snapshots = components().map { $0.snapshot() }
        return window.locked { previous in
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
                snapshots, previous: previous.snapshots, consumers: consumers())
            if advancing {
                previous = Window(
                    nanos: now, snapshots: Dictionary(snapshots.map { ($0.id, $0) }, uniquingKeysWith: { $1 }))
            }
            var report = MetricsReport(
                final: final, uptimeSecs: Double(now &- startNanos) / 1e9, components: snapshots, rates: rates,
                bottleneck: final ? nil : bottleneck, maxRSSBytes: MetricsReport.currentMaxRSSBytes())
            report.reloads = reloads?()
            return report
        }
    }

    /// Writes the final `report`, and shows it to the observer.
    public func writeFinal(_ report: MetricsReport) async {
        observer?(report)
        await write(report)
    }

    /// Writes `report`; a closed output is ignored, because the pipeline is already stopping then.
    public func write(_ report: MetricsReport) async {
        try? await writer.write(Array(MetricsFormatter.render(report, as: settings.format).utf8))
    }
}
