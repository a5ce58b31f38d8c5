import Testing

@testable import SluiceCore

struct MetricsFormatterTests {
    static func report() -> MetricsReport {
        var discards = DiscardCounts()
        discards[.parseError] = 2
        var latency = LatencyHistogram()
        for _ in 0..<99 { latency.record(nanos: 300_000) }
        latency.record(nanos: 1_900_000)
        let source = ComponentSnapshot(
            id: "in", kind: .source, typeName: "stdin", received: 1202, sent: 1200, discarded: discards, buffer: nil,
            recentLatency: LatencyHistogram(), totalLatency: LatencyHistogram())
        let sink = ComponentSnapshot(
            id: "out", kind: .sink, typeName: "stdout", received: 1200, sent: 1200, discarded: DiscardCounts(),
            buffer: BufferSnapshot(
                whenFull: "block", maxEvents: 1000, events: 0, highWaterEvents: 1000, blockedSecsTotal: 0.42,
                producersBlocked: 0),
            recentLatency: latency, totalLatency: latency)
        return MetricsReport(
            final: false, uptimeSecs: 3, components: [source, sink], rates: ["in": (400, 400), "out": (400, 400)],
            bottleneck: Bottleneck(id: "out", reason: "its producers wait for room in its input buffer"),
            maxRSSBytes: 12_345_678)
    }

    @Test func jsonIsOneLineWithTheDocumentedNames() {
        let text = MetricsFormatter.render(Self.report(), as: .json)
        #expect(
            text
                == #"{"type":"metrics","final":false,"uptime_secs":3.0,"bottleneck":"out","#
                + #""bottleneck_reason":"its producers wait for room in its input buffer","process":{"max_rss_bytes":12345678},"#
                + #""components":["#
                + #"{"component_id":"in","component_kind":"source","component_type":"stdin","received_events_total":1202,"#
                + #""sent_events_total":1200,"discarded_events_total":{"buffer_full":0,"parse_error":2,"oversize":0,"#
                + #""filtered":0,"error":0,"late":0,"duplicate":0,"throttled":0,"sampled":0,"unmatched":0,"superseded":0},"#
                + #""folded_events_total":0,"created_events_total":0,"#
                + #""received_events_per_sec":400.0,"sent_events_per_sec":400.0,"buffer":null},"#
                + #"{"component_id":"out","component_kind":"sink","component_type":"stdout","received_events_total":1200,"#
                + #""sent_events_total":1200,"discarded_events_total":{"buffer_full":0,"parse_error":0,"oversize":0,"#
                + #""filtered":0,"error":0,"late":0,"duplicate":0,"throttled":0,"sampled":0,"unmatched":0,"superseded":0},"#
                + #""folded_events_total":0,"created_events_total":0,"#
                + #""received_events_per_sec":400.0,"sent_events_per_sec":400.0,"#
                + #""buffer":{"when_full":"block","max_events":1000,"events":0,"high_water_events":1000,"#
                + #""blocked_secs_total":0.42},"latency_ms":{"p50":0.32,"p99":0.32}}]}"# + "\n")
    }

    @Test func prometheusUsesTheSameVocabulary() {
        let text = MetricsFormatter.render(Self.report(), as: .prometheus)
        #expect(
            text.contains(
                #"component_received_events_total{component_id="out",component_kind="sink",component_type="stdout"} 1200"#
            ))
        #expect(
            text.contains(
                #"component_discarded_events_total{component_id="in",component_kind="source",component_type="stdin",cause="parse_error"} 2"#
            ))
        #expect(
            text.contains(#"buffer_max_events{component_id="out",component_kind="sink",component_type="stdout"} 1000"#))
        #expect(
            text.contains(
                #"buffer_blocked_seconds_total{component_id="out",component_kind="sink",component_type="stdout"} 0.42"#)
        )
        #expect(text.contains("# TYPE component_sent_events_total counter"))
        // Latency in Prometheus' base unit: 0.32 ms is 0.00032 s.
        #expect(
            text.contains(
                #"component_latency_seconds{component_id="out",component_kind="sink",component_type="stdout",quantile="0.99"} 0.00032"#
            ))
    }

    /// Every metric carries help text and a type, once, before its first sample: what `promtool check metrics`
    /// asks (the end-to-end API tests run promtool itself).
    @Test func prometheusDescribesEveryMetricOnceBeforeItsSamples() {
        let lines = MetricsFormatter.render(Self.report(), as: .prometheus).split(separator: "\n")
        var described: [String: Int] = [:]
        var typed: Set<Substring> = []
        for line in lines {
            if line.hasPrefix("# HELP ") {
                let name = String(line.split(separator: " ")[2])
                described[name, default: 0] += 1
            } else if line.hasPrefix("# TYPE ") {
                typed.insert(line.split(separator: " ")[2])
            } else if !line.hasPrefix("#") {
                let name = String(line.prefix { $0 != "{" && $0 != " " })
                #expect(described[name] == 1, "\(name) has no single HELP line before its samples")
                #expect(typed.contains(Substring(name)), "\(name) has no TYPE line before its samples")
            }
        }
        #expect(described.count >= 10)
    }

    @Test func textNamesTheBottleneck() {
        let text = MetricsFormatter.render(Self.report(), as: .text)
        #expect(text.contains("parse_error=2"))
        #expect(text.contains("block 0/1000 hw 1000"))
        #expect(text.hasSuffix("bottleneck: out (its producers wait for room in its input buffer)\n"))
    }

    @Test func textWritesDetailsPlainly() {
        var report = Self.report()
        report.components[1].details = ["runs_in": "hot", "clients": ["connected": 2]]
        let text = MetricsFormatter.render(report, as: .text)
        #expect(text.contains("out runs_in: hot\n"))
        #expect(text.contains("out clients: connected=2\n"))
    }
}

struct LatencyHistogramTests {
    @Test func quantilesAreWithinABucket() throws {
        var histogram = LatencyHistogram()
        for micros in 1...1000 { histogram.record(nanos: UInt64(micros) * 1000) }
        let p50 = try #require(histogram.quantileMillis(0.5))
        let p99 = try #require(histogram.quantileMillis(0.99))
        #expect(p50 >= 0.5 && p50 <= 0.5 * 1.13)
        #expect(p99 >= 0.99 && p99 <= 0.99 * 1.13)
        #expect(LatencyHistogram().quantileMillis(0.5) == nil)
    }
}

struct BottleneckTests {
    func component(_ id: String, events: Int, max: Int) -> ComponentSnapshot {
        ComponentSnapshot(
            id: id, kind: .sink, typeName: "t", received: 0, sent: 0, discarded: DiscardCounts(),
            buffer: BufferSnapshot(
                whenFull: "block", maxEvents: max, events: events, highWaterEvents: events, blockedSecsTotal: 0,
                producersBlocked: 0),
            recentLatency: LatencyHistogram(), totalLatency: LatencyHistogram())
    }

    @Test func theMostDownstreamFullBufferIsTheBottleneck() {
        // a -> b -> c, with b and c full: c holds everything back.
        let consumers = ["a": ["b"], "b": ["c"], "c": []]
        let full = [
            component("a", events: 0, max: 10), component("b", events: 10, max: 10),
            component("c", events: 10, max: 10),
        ]
        #expect(MetricsReport.findBottleneck(full, previous: [:], consumers: consumers)?.id == "c")
        let onlyB = [
            component("a", events: 0, max: 10), component("b", events: 10, max: 10), component("c", events: 1, max: 10),
        ]
        #expect(MetricsReport.findBottleneck(onlyB, previous: [:], consumers: consumers)?.id == "b")
        let none = [
            component("a", events: 0, max: 10), component("b", events: 1, max: 10), component("c", events: 1, max: 10),
        ]
        #expect(MetricsReport.findBottleneck(none, previous: [:], consumers: consumers) == nil)
    }
}

struct MetricsReporterTests {
    /// Periodic reports give rates over their interval; the final one over the whole run, since the last interval
    /// is usually a sliver (20 events in 0.01 s would read as 2,000 events/s).
    @Test func theFinalReportGivesRatesOverTheWholeRun() {
        let metrics = ComponentMetrics(id: "in", kind: .source, typeName: "counter")
        let start: UInt64 = 1_000_000_000
        let reporter = MetricsReporter(
            settings: MetricsSettings(), components: [metrics], consumers: [:],
            writer: OutputWriter(fileDescriptor: -1, label: "unused"), startNanos: start)
        metrics.recordReceived(20)
        let periodic = reporter.makeReport(final: false, now: start + 1_000_000_000)
        #expect(periodic.rates["in"]?.received == 20)
        metrics.recordReceived(20)
        let final = reporter.makeReport(final: true, now: start + 2_000_000_000 + 10_000_000)
        #expect(abs((final.rates["in"]?.received ?? 0) - 40 / 2.01) < 1e-9)
    }
}
