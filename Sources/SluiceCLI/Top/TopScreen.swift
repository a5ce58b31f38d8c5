package import SluiceCore

/// What `sluice top` shows for one report: a header, one row per component in the pipeline's order, and the
/// bottleneck with its reason. Pure text, at most `width` columns a line; the terminal handling is elsewhere.
package struct TopScreen {
    package var address: String
    package var width: Int

    package init(address: String, width: Int) {
        self.address = address
        self.width = max(60, width)
    }

    private static let columns: [(title: String, width: Int, right: Bool)] = [
        ("COMPONENT", 13, false), ("TYPE", 9, false), ("IN/S", 7, true), ("OUT/S", 7, true),
        ("DISCARDED", 9, true), ("BUFFER", 13, false), ("BLOCKED", 7, true), ("P99 MS", 7, true),
    ]

    /// The screen for `report` (the JSON of `/api/live`), with `status` (the connection's state) at the bottom.
    package func lines(report: JSONValue?, status: String?) -> [String] {
        var lines: [String] = []
        guard let report else {
            lines.append(fit("sluice top · \(address) · q quits"))
            lines.append("")
            lines.append(fit(status ?? "waiting for the first report"))
            return lines
        }
        let uptime = report["uptime_secs"]?.doubleValue ?? 0
        let rss = (report["process"]?["max_rss_bytes"]?.intValue ?? 0) >> 20
        let final = report["final"] == .bool(true)
        lines.append(
            fit(
                "sluice top · \(address) · up \(Self.duration(uptime)) · rss \(rss) MiB"
                    + (final ? " · stopped" : "") + " · q quits"))
        lines.append("")
        lines.append(row(Self.columns.map(\.title), marker: " "))
        let bottleneck = report["bottleneck"]?.stringValue
        for component in report["components"]?.arrayValue ?? [] {
            let id = component["component_id"]?.stringValue ?? "?"
            var discarded = 0
            if case .object(let causes) = component["discarded_events_total"] ?? .null {
                discarded = causes.fields.reduce(0) { $0 + Int($1.value.intValue ?? 0) }
            }
            var buffer = "-"
            var blocked = "-"
            if case .object = component["buffer"] ?? .null, let fields = component["buffer"] {
                let events = Double(fields["events"]?.intValue ?? 0)
                let policy = Self.policyShort(fields["when_full"]?.stringValue ?? "")
                if let max = fields["max_events"]?.intValue, max > 0 {
                    buffer = "\(policy) \(Int((events / Double(max) * 100).rounded()))%"
                } else {
                    buffer = "\(policy) \(Self.count(events))"
                }
                blocked = String(format1(fields["blocked_secs_total"]?.doubleValue ?? 0)) + "s"
            }
            let p99 = component["latency_ms"]?["p99"]?.doubleValue.map { format1($0) } ?? "-"
            lines.append(
                row(
                    [
                        id, component["component_type"]?.stringValue ?? "?",
                        Self.count(component["received_events_per_sec"]?.doubleValue ?? 0),
                        Self.count(component["sent_events_per_sec"]?.doubleValue ?? 0), Self.count(Double(discarded)),
                        buffer, blocked, p99,
                    ], marker: id == bottleneck ? "▶" : " "))
        }
        lines.append("")
        if let bottleneck {
            // The reason on a line of its own, so that a long id does not cut it off at the edge.
            lines.append(fit("▶ bottleneck: \(bottleneck)"))
            lines.append(fit("  " + (report["bottleneck_reason"]?.stringValue ?? "")))
        } else {
            lines.append(fit(final ? "the pipeline has stopped; this is its final report" : "no bottleneck"))
        }
        if let status { lines.append(fit(status)) }
        return lines
    }

    private func row(_ cells: [String], marker: String) -> String {
        var line = marker
        for (cell, column) in zip(cells, Self.columns) {
            var text = cell
            if text.count > column.width { text = String(text.prefix(column.width - 1)) + "…" }
            let pad = String(repeating: " ", count: column.width - text.count)
            line += (column.right ? pad + text : text + pad) + " "
        }
        return fit(line.trimmingTrailing())
    }

    private func fit(_ line: String) -> String { line.count <= width ? line : String(line.prefix(width)) }

    /// 950, 12.3k, 4.5M: a count or rate in at most 6 characters.
    static func count(_ value: Double) -> String {
        switch value {
        case ..<1000: String(Int(value.rounded()))
        case ..<1_000_000: format1(value / 1000) + "k"
        case ..<1_000_000_000: format1(value / 1_000_000) + "M"
        default: format1(value / 1_000_000_000) + "G"
        }
    }

    static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds)
        if whole < 60 { return "\(whole)s" }
        if whole < 3600 { return "\(whole / 60)m\(whole % 60)s" }
        return "\(whole / 3600)h\(whole % 3600 / 60)m"
    }

    static func policyShort(_ policy: String) -> String {
        switch policy {
        case "drop_newest": "newest"
        case "drop_oldest": "oldest"
        case "latest_per_key": "latest"
        case "unbounded": "unbnd"
        default: policy
        }
    }
}

/// One decimal: 12.3.
private func format1(_ value: Double) -> String {
    let tenths = Int((value * 10).rounded())
    return "\(tenths / 10).\(abs(tenths % 10))"
}

extension String {
    fileprivate func trimmingTrailing() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}
