public import SluiceCore

/// Options of the `aggregate` transform.
public struct AggregateTransformConfig: TransformConfig {
    public static let typeName = "aggregate"
    public static let summary = "Folds events into one per group and time window: counts, averages, percentiles..."

    /// How windows are cut.
    public enum Window: Sendable, Equatable {
        /// Back to back windows of `size` milliseconds, aligned to the Unix epoch.
        case tumbling(size: Int64)
        /// Windows of `size` milliseconds starting every `hop` milliseconds, aligned to the Unix epoch.
        case hopping(size: Int64, hop: Int64)
        /// Per group, a window that ends `gap` milliseconds after its last event.
        case session(gap: Int64)
    }

    /// Where an event's time comes from.
    public enum Time: Sendable {
        /// The wall clock when the event is processed.
        case processing
        /// A field of the event (RFC 3339 text or epoch milliseconds), with a watermark that trails the largest time
        /// seen by `lateness` milliseconds, and open windows flushed after `idleFlush` milliseconds without an event.
        case event(field: Expression, lateness: Int64, idleFlush: Int64?)
    }

    /// The group expressions and the output field each one's value goes to.
    let groupBy: [(field: String, expression: Expression)]
    public let window: Window
    public let time: Time
    let aggregations: [Aggregation]
    /// Open windows (one per group and window) held at most; past it the oldest window is emitted early.
    public let maxGroups: Int

    /// Output fields every aggregate event has besides its groups and aggregations.
    static let reservedFields = ["window_start", "window_end", "partial"]

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        let groupBy = Self.readGroupBy(options.value("group_by"), options)
        let window = Self.readWindow(
            options.required("window", note: "for example 'window: {type: tumbling, size_secs: 60}'"))
        let time = Self.readTime(options.value("time"))
        let aggregations = Self.readAggregations(
            options.required(
                "aggregations", note: "for example 'aggregations: {readings: count(), avg_temp: avg(.temperature)}'"))
        let maxGroups = options.value("max_groups")?.int(in: 1...10_000_000) ?? 100_000
        // Output fields must not collide.
        var seen: Set<String> = []
        for field in (groupBy ?? []).map(\.field) + (aggregations ?? []).map(\.field) {
            if Self.reservedFields.contains(field) || !seen.insert(field).inserted {
                options.log.error(
                    "the output field '\(field)' is written twice", at: options.mark,
                    notes: ["group fields, aggregation names and window_start, window_end, partial must all differ"])
            }
        }
        self.groupBy = try options.validated(groupBy)
        self.window = try options.validated(window)
        self.time = try options.validated(time)
        self.aggregations = try options.validated(aggregations)
        self.maxGroups = maxGroups
    }

    public func makeTransform(_ context: TransformContext) -> any Transform {
        AggregateTransform(config: self, context: context)
    }

    // MARK: - Reading

    /// `[.device, .region]` (each value under its path's last key) or `{name: expression, ...}`; no grouping when
    /// absent.
    private static func readGroupBy(_ node: ConfigNode?, _ options: ConfigMapping)
        -> [(field: String, expression: Expression)]?
    {
        guard let node else { return [] }
        if node.isMapping, let mapping = node.mapping() {
            var groups: [(field: String, expression: Expression)] = []
            for (name, _, value) in mapping.allEntries(naming: { "group '\($0)'" }) {
                if let expression = value.expression() { groups.append((name, expression)) }
            }
            return groups
        }
        guard let items = node.list(example: "for example 'group_by: [.device]' or 'group_by: {region: .meta.region}'")
        else { return nil }
        var groups: [(field: String, expression: Expression)] = []
        for item in items {
            guard let expression = item.expression() else { continue }
            guard case .key(let name)? = expression.pathSteps?.last else {
                options.log.error(
                    "a group_by expression that is not a field path needs a name", at: item.mark,
                    notes: ["write group_by as a mapping: {kind: 'lower(.type)'}"])
                continue
            }
            groups.append((name, expression))
        }
        return groups
    }

    private static func readWindow(_ node: ConfigNode?) -> Window? {
        guard let window = node?.mapping() else { return nil }
        enum Kind: String, ConfigChoice {
            case tumbling, hopping, session
        }
        let kind = window.required("type", note: "tumbling, hopping or session")?.choice(Kind.self)
        func seconds(_ key: String) -> Int64? {
            window.required(key, note: "in seconds, for example '\(key): 60'")?.double(in: 0.001...31_536_000)
                .map { Int64(($0 * 1000).rounded()) }
        }
        defer { window.finish() }
        switch kind {
        case .tumbling:
            return seconds("size_secs").map { .tumbling(size: $0) }
        case .hopping:
            guard let size = seconds("size_secs"), let hop = seconds("hop_secs") else { return nil }
            guard hop <= size, size % hop == 0 else {
                window.log.error(
                    "'size_secs' must be a whole multiple of 'hop_secs'", at: window.mark,
                    notes: ["each event then belongs to exactly size_secs / hop_secs windows"])
                return nil
            }
            return .hopping(size: size, hop: hop)
        case .session:
            return seconds("gap_secs").map { .session(gap: $0) }
        case nil:
            return nil
        }
    }

    private static func readTime(_ node: ConfigNode?) -> Time? {
        guard let node else { return .processing }
        guard let time = node.mapping() else { return nil }
        defer { time.finish() }
        guard let fieldNode = time.value("field") else {
            for key in ["allowed_lateness_secs", "idle_flush_secs"] where time.value(key) != nil {
                time.log.error("'\(key)' needs event time: give 'field'", at: time.value(key)?.mark)
            }
            return .processing
        }
        let field = fieldNode.expression()
        let lateness = time.value("allowed_lateness_secs")?.double(in: 0...86_400) ?? 0
        let idle = time.value("idle_flush_secs")?.double(in: 0.001...86_400)
        guard let field else { return nil }
        return .event(
            field: field, lateness: Int64((lateness * 1000).rounded()),
            idleFlush: idle.map { Int64(($0 * 1000).rounded()) })
    }

    private static func readAggregations(_ node: ConfigNode?) -> [Aggregation]? {
        guard let mapping = node?.mapping() else { return nil }
        var aggregations: [Aggregation] = []
        for (name, _, value) in mapping.allEntries(naming: { "aggregation '\($0)'" }) {
            if let aggregation = AggregationParser.parse(field: name, value) { aggregations.append(aggregation) }
        }
        if aggregations.isEmpty, mapping.keys.isEmpty {
            mapping.log.error(
                "'aggregations' is empty", at: mapping.mark, notes: ["for example 'aggregations: {readings: count()}'"])
        }
        return aggregations
    }
}

/// Reads `function(expression, parameter)` as written in `aggregations:`, reporting mistakes at their column.
enum AggregationParser {
    static func parse(field: String, _ node: ConfigNode) -> Aggregation? {
        guard let text = node.string() else { return nil }
        let functions = Aggregation.Function.allCases.map(\.rawValue)
        guard let open = text.firstIndex(of: "("), text.hasSuffix(")") else {
            var notes = [
                "write a function call such as avg(.temperature); functions: " + functions.joined(separator: ", ")
            ]
            if text.contains("("), !text.contains(")") {
                notes.append("in a {flow: mapping} a comma ends the value: quote it, 'percentile(.v, 95)'")
            }
            node.log.error("'\(text)' is not an aggregation", at: node.mark, notes: notes)
            return nil
        }
        let name = text[..<open].trimmingCharacters(in: " ")
        guard let function = Aggregation.Function(rawValue: name) else {
            node.log.error(
                "unknown aggregation function '\(name)'", at: node.mark,
                notes: [Suggestion.expectedOneOf(functions, given: name)])
            return nil
        }
        let bodyStart =
            text.unicodeScalars.distance(
                from: text.unicodeScalars.startIndex, to: open.samePosition(in: text.unicodeScalars)!) + 1
        let body = String(text[text.index(after: open)..<text.index(before: text.endIndex)])
        let arguments = splitArguments(body)
        func fail(_ message: String, _ note: String) -> Aggregation? {
            node.log.error(message, at: node.mark(atOffset: bodyStart), notes: [note])
            return nil
        }
        let usage: String =
            switch function {
            case .count: "count() counts events; count(.field) counts the events where it is not null"
            case .percentile: "percentile(.field, 95): the 95th percentile, from 0 to 100"
            case .collect: "collect(.field, 100): the first 100 values, at most 100,000"
            default: "\(name)(.field)"
            }
        let wanted: ClosedRange<Int> =
            switch function {
            case .count: 0...1
            case .percentile, .collect: 2...2
            default: 1...1
            }
        guard wanted.contains(arguments.count) else {
            return fail(
                "\(name) takes \(wanted.lowerBound == wanted.upperBound ? "\(wanted.lowerBound)" : "0 or 1") argument\(wanted.upperBound == 1 && wanted.lowerBound == 1 ? "" : "s"), found \(arguments.count)",
                usage)
        }
        var argument: Expression?
        if let first = arguments.first {
            do {
                argument = try Expression(first.text)
            } catch {
                node.log.error(
                    error.message, at: node.mark(atOffset: bodyStart + first.offset + error.offset),
                    notes: error.note.map { [$0] } ?? [])
                return nil
            }
        }
        var parameter = 0.0
        if arguments.count == 2 {
            let text = arguments[1].text.trimmingCharacters(in: " ")
            switch function {
            case .percentile:
                guard let percent = Double(text), (0...100).contains(percent) else {
                    return fail("the percentile must be a number from 0 to 100, found '\(text)'", usage)
                }
                parameter = percent / 100
            case .collect:
                guard let limit = Int(text), (1...100_000).contains(limit) else {
                    return fail("the collect limit must be a whole number from 1 to 100000, found '\(text)'", usage)
                }
                parameter = Double(limit)
            default:
                break
            }
        }
        return Aggregation(field: field, function: function, argument: argument, parameter: parameter)
    }

    /// The arguments of a call body, split at top-level commas (not inside brackets, parentheses or strings), each
    /// with its scalar offset in the body.
    static func splitArguments(_ body: String) -> [(text: String, offset: Int)] {
        let scalars = Array(body.unicodeScalars)
        guard scalars.contains(where: { $0 != " " }) else { return [] }
        var arguments: [(String, Int)] = []
        var depth = 0
        var quote: Unicode.Scalar?
        var start = 0
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if let open = quote {
                if scalar == "\\" {
                    index += 1
                } else if scalar == open {
                    quote = nil
                }
            } else {
                switch scalar {
                case "\"", "'": quote = scalar
                case "(", "[", "{": depth += 1
                case ")", "]", "}": depth -= 1
                case "," where depth == 0:
                    arguments.append((String(String.UnicodeScalarView(scalars[start..<index])), start))
                    start = index + 1
                default: break
                }
            }
            index += 1
        }
        arguments.append((String(String.UnicodeScalarView(scalars[start...])), start))
        return arguments
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        Substring(self).trimmingCharacters(in: set)
    }
}
