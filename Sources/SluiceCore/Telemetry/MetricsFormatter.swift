/// Renders a ``MetricsReport`` as text for people, one line of JSON, or Prometheus exposition; every format
/// uses the same vocabulary (`received_events_total`, `discarded_events_total`, `buffer`, ...).
public enum MetricsFormatter {
    /// The report in `format`, ending with a newline.
    public static func render(_ report: MetricsReport, as format: MetricsSettings.Format) -> String {
        switch format {
        case .text: text(report)
        case .json: JSONWriter.string(json(report)) + "\n"
        case .prometheus: prometheus(report)
        }
    }

    // MARK: - JSON

    /// The report as a JSON value, with the field names the README documents.
    public static func json(_ report: MetricsReport) -> JSONValue {
        var top = JSONObject()
        top["type"] = "metrics"
        top["final"] = .bool(report.final)
        top["uptime_secs"] = .double(rounded(report.uptimeSecs, 3))
        top["bottleneck"] = report.bottleneck.map { .string($0) } ?? .null
        top["bottleneck_reason"] = report.bottleneckReason.map { .string($0) } ?? .null
        top["process"] = ["max_rss_bytes": .int(Int64(report.maxRSSBytes))]
        if let reloads = report.reloads {
            top["reloads_total"] = .int(Int64(reloads.total))
            top["last_reload"] =
                reloads.last.map { last in
                    [
                        "at": .string(RFC3339.format(epochMillis: last.atMillis)),
                        "result": .string(last.result.rawValue), "message": .string(last.message),
                    ]
                } ?? .null
        }
        top["components"] = .array(report.components.map { component(report, $0) })
        return .object(top)
    }

    private static func component(_ report: MetricsReport, _ component: ComponentSnapshot) -> JSONValue {
        var object = JSONObject()
        object["component_id"] = .string(component.id)
        object["component_kind"] = .string(component.kind.rawValue)
        object["component_type"] = .string(component.typeName)
        object["received_events_total"] = .int(Int64(component.received))
        object["sent_events_total"] = .int(Int64(component.sent))
        var discarded = JSONObject()
        for cause in DiscardCause.allCases { discarded[cause.rawValue] = .int(Int64(component.discarded[cause])) }
        object["discarded_events_total"] = .object(discarded)
        object["folded_events_total"] = .int(Int64(component.folded))
        object["created_events_total"] = .int(Int64(component.created))
        let rate = report.rates[component.id]
        object["received_events_per_sec"] = .double(rounded(rate?.received ?? 0, 1))
        object["sent_events_per_sec"] = .double(rounded(rate?.sent ?? 0, 1))
        if let buffer = component.buffer {
            var fields = JSONObject()
            fields["when_full"] = .string(buffer.whenFull)
            fields["max_events"] = buffer.maxEvents.map { .int(Int64($0)) } ?? .null
            fields["events"] = .int(Int64(buffer.events))
            fields["high_water_events"] = .int(Int64(buffer.highWaterEvents))
            fields["blocked_secs_total"] = .double(rounded(buffer.blockedSecsTotal, 3))
            object["buffer"] = .object(fields)
        } else {
            object["buffer"] = .null
        }
        if let state = component.state {
            object["state"] = [state.name: .int(Int64(state.size)), "evicted_total": .int(Int64(state.evictedTotal))]
        }
        if component.kind == .sink {
            let latency = report.latency(of: component)
            object["latency_ms"] = [
                "p50": latency.quantileMillis(0.5).map { .double(rounded($0, 3)) } ?? .null,
                "p99": latency.quantileMillis(0.99).map { .double(rounded($0, 3)) } ?? .null,
            ]
        }
        for field in component.details.fields { object[field.key] = field.value }
        return .object(object)
    }

    // MARK: - Prometheus

    /// Prometheus text exposition: every metric with `# HELP` and `# TYPE`, named in base units (seconds, bytes) as
    /// Prometheus' conventions and `promtool check metrics` ask.
    private static func prometheus(_ report: MetricsReport) -> String {
        var lines = [
            "# sluice report uptime_secs=\(rounded(report.uptimeSecs, 3)) final=\(report.final)",
            "# HELP process_max_resident_memory_bytes The process's peak resident memory.",
            "# TYPE process_max_resident_memory_bytes gauge",
            "process_max_resident_memory_bytes \(report.maxRSSBytes)",
        ]
        if let reloads = report.reloads {
            lines += [
                "# HELP sluice_reloads_total Reloads of the pipeline file asked for (SIGHUP or --watch), whatever their result.",
                "# TYPE sluice_reloads_total counter",
                "sluice_reloads_total \(reloads.total)",
            ]
            if let last = reloads.last {
                let applied = last.result == .applied || last.result == .unchanged
                lines += [
                    "# HELP sluice_last_reload_successful Whether the last reload was applied (1) or changed nothing because of an error (0).",
                    "# TYPE sluice_last_reload_successful gauge",
                    "sluice_last_reload_successful{result=\"\(last.result.rawValue)\"} \(applied ? 1 : 0)",
                    "# HELP sluice_last_reload_timestamp_seconds When the last reload was asked for.",
                    "# TYPE sluice_last_reload_timestamp_seconds gauge",
                    "sluice_last_reload_timestamp_seconds \(number(Double(last.atMillis) / 1000))",
                ]
            }
        }
        func metric(_ name: String, _ type: String, _ help: String, _ values: [(ComponentSnapshot, String, Double)?]) {
            let present = values.compactMap { $0 }
            guard !present.isEmpty else { return }
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            for (component, extra, value) in present {
                var labels =
                    "component_id=\"\(component.id)\",component_kind=\"\(component.kind.rawValue)\","
                    + "component_type=\"\(component.typeName)\""
                if !extra.isEmpty { labels += "," + extra }
                lines.append("\(name){\(labels)} \(number(value))")
            }
        }
        let all = report.components
        metric(
            "component_received_events_total", "counter", "Events the component took in.",
            all.map { ($0, "", Double($0.received)) })
        metric(
            "component_sent_events_total", "counter",
            "Events the component passed on (once per event, whatever the fan-out).",
            all.map { ($0, "", Double($0.sent)) })
        metric(
            "component_discarded_events_total", "counter", "Events the component discarded, by cause.",
            all.flatMap { component in
                DiscardCause.allCases.map { (component, "cause=\"\($0.rawValue)\"", Double(component.discarded[$0])) }
            })
        metric(
            "component_folded_events_total", "counter", "Input events absorbed into the component's state.",
            all.map { ($0, "", Double($0.folded)) })
        metric(
            "component_created_events_total", "counter", "Events the component made itself (an aggregate's results).",
            all.map { ($0, "", Double($0.created)) })
        metric(
            "component_state_size", "gauge", "Keys or open windows the component holds.",
            all.map { c in c.state.map { (c, "state=\"\($0.name)\"", Double($0.size)) } })
        metric(
            "component_state_evicted_total", "counter", "Keys or windows given up early at the state limit.",
            all.map { c in c.state.map { (c, "state=\"\($0.name)\"", Double($0.evictedTotal)) } })
        metric(
            "buffer_events", "gauge", "Events waiting in the component's input buffer.",
            all.map { c in c.buffer.map { (c, "", Double($0.events)) } })
        metric(
            "buffer_max_events", "gauge", "The input buffer's capacity (absent when unbounded).",
            all.map { c in c.buffer?.maxEvents.map { (c, "", Double($0)) } })
        metric(
            "buffer_high_water_events", "gauge", "The most events the input buffer has held.",
            all.map { c in c.buffer.map { (c, "", Double($0.highWaterEvents)) } })
        metric(
            "buffer_blocked_seconds_total", "counter", "Seconds producers spent waiting for room in the input buffer.",
            all.map { c in c.buffer.map { (c, "", rounded($0.blockedSecsTotal, 6)) } })
        metric(
            "component_latency_seconds", "summary",
            "Seconds from an event's ingestion to its write by the sink (the last interval; the whole run when final).",
            all.filter { $0.kind == .sink }.flatMap { component in
                [0.5, 0.99].map { quantile in
                    report.latency(of: component).quantileMillis(quantile).map {
                        (component, "quantile=\"\(quantile)\"", rounded($0 / 1000, 6))
                    }
                }
            })
        return lines.joined(separator: "\n") + "\n\n"
    }

    // MARK: - Text

    private static func text(_ report: MetricsReport) -> String {
        // Folded and created events get columns once some component has them: a stateless pipeline's table stays
        // as narrow as it was.
        let stateful = report.components.contains { $0.folded > 0 || $0.created > 0 || $0.state != nil }
        var header = [
            "component", "kind", "type", "received", "sent", "in/s", "out/s", "discarded", "buffer", "blocked",
            "p50/p99 ms",
        ]
        if stateful { header.insert(contentsOf: ["folded", "created"], at: 7) }
        var rows = [header]
        for component in report.components {
            let rate = report.rates[component.id]
            let discards = DiscardCause.allCases.filter { component.discarded[$0] > 0 }
                .map { "\($0.rawValue)=\(component.discarded[$0])" }.joined(separator: " ")
            var buffer = "-"
            var blocked = "-"
            if let snapshot = component.buffer {
                let capacity = snapshot.maxEvents.map(String.init) ?? "∞"
                buffer = "\(snapshot.whenFull) \(snapshot.events)/\(capacity) hw \(snapshot.highWaterEvents)"
                blocked = String(format3(snapshot.blockedSecsTotal)) + "s"
            }
            var latency = "-"
            if component.kind == .sink {
                let histogram = report.latency(of: component)
                if let p50 = histogram.quantileMillis(0.5), let p99 = histogram.quantileMillis(0.99) {
                    latency = "\(format3(p50))/\(format3(p99))"
                }
            }
            var row = [
                component.id, component.kind.rawValue, component.typeName, String(component.received),
                String(component.sent), String(Int((rate?.received ?? 0).rounded())),
                String(Int((rate?.sent ?? 0).rounded())), discards.isEmpty ? "-" : discards, buffer, blocked,
                latency,
            ]
            if stateful { row.insert(contentsOf: [String(component.folded), String(component.created)], at: 7) }
            rows.append(row)
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        var lines = [
            "── sluice metrics\(report.final ? " (final)" : "") · uptime \(format3(report.uptimeSecs))s · "
                + "max rss \(report.maxRSSBytes / (1 << 20)) MiB " + String(repeating: "─", count: 30)
        ]
        for row in rows {
            lines.append(
                row.enumerated().map { column, cell in
                    let pad = String(repeating: " ", count: widths[column] - cell.count)
                    // Numbers align right, words left.
                    return (3...(stateful ? 8 : 6)).contains(column) ? pad + cell : cell + pad
                }.joined(separator: "  ").trimmingTrailingSpaces())
        }
        for component in report.components {
            if let state = component.state {
                lines.append("\(component.id) state: \(state.name)=\(state.size) evicted_total=\(state.evictedTotal)")
            }
            for field in component.details.fields {
                lines.append("\(component.id) \(field.key): \(detailsText(field.value))")
            }
        }
        if let bottleneck = report.bottleneck {
            lines.append("bottleneck: \(bottleneck) (\(report.bottleneckReason ?? "its input is under pressure"))")
        }
        if let reloads = report.reloads, let last = reloads.last {
            lines.append(
                "reloads: \(reloads.total), the last at \(RFC3339.format(epochMillis: last.atMillis)) "
                    + "\(last.result.rawValue): \(last.message)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `key=value` pairs for an object, a string as it is, JSON otherwise.
    private static func detailsText(_ value: JSONValue) -> String {
        if let string = value.stringValue { return string }
        guard case .object(let object) = value else { return JSONWriter.string(value) }
        return object.fields.map { field in
            "\(field.key)=\(field.value.stringValue ?? JSONWriter.string(field.value))"
        }.joined(separator: " ")
    }

    // MARK: - Numbers

    private static func rounded(_ value: Double, _ digits: Int) -> Double {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        return (value * scale).rounded() / scale
    }

    private static func format3(_ value: Double) -> String { number(rounded(value, 3)) }

    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}
