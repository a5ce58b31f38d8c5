internal import SluiceYAML

/// Reads a pipeline file (YAML or JSON) into a ``PipelineDefinition``, collecting every problem as a
/// ``Diagnostic`` with its line and column.
public struct PipelineLoader {
    /// The component types the file may name.
    public let catalog: ComponentCatalog
    /// The variables `${NAME}` is replaced from.
    public let environment: [String: String]

    /// A loader for files naming the types of `catalog`, with `${NAME}` replaced from `environment`.
    public init(catalog: ComponentCatalog, environment: [String: String]) {
        self.catalog = catalog
        self.environment = environment
    }

    /// The outcome of loading: a definition when there were no errors, and every diagnostic found.
    public struct Result {
        /// The pipeline, when the file is valid.
        public let definition: PipelineDefinition?
        /// Errors and warnings in the order found.
        public let diagnostics: [Diagnostic]
    }

    /// Reads and validates `text`.
    public func load(_ text: String) -> Result {
        let log = DiagnosticLog()
        let root: YAMLNode?
        do {
            root = try YAMLParser.parse(text)
        } catch {
            var notes: [String] = []
            if let context = error.context { notes.append(context) }
            log.error("invalid YAML: \(error.message)", at: FilePosition(error.mark), notes: notes)
            return Result(definition: nil, diagnostics: log.diagnostics)
        }
        guard let root else {
            log.error(
                "the pipeline file is empty", at: nil,
                notes: ["a pipeline has 'sources', 'sinks' and optionally 'transforms' and 'metrics'"])
            return Result(definition: nil, diagnostics: log.diagnostics)
        }
        let reader = Reader(catalog: catalog, log: log, environment: environment)
        let definition = reader.read(root)
        return Result(definition: log.hasErrors ? nil : definition, diagnostics: log.diagnostics)
    }
}

/// One pass over a parsed file; separate from ``PipelineLoader`` so that no state is shared between loads.
private final class Reader {
    let catalog: ComponentCatalog
    let log: DiagnosticLog
    let environment: [String: String]

    init(catalog: ComponentCatalog, log: DiagnosticLog, environment: [String: String]) {
        self.catalog = catalog
        self.log = log
        self.environment = environment
    }

    func read(_ root: YAMLNode) -> PipelineDefinition? {
        let top = ConfigNode(root, name: "the pipeline", log: log, environment: environment)
        guard let pipeline = top.mapping() else { return nil }
        var components: [ComponentDefinition] = []
        // Every component whose id and inputs could be read, valid or not, so that the graph is checked whole and
        // an invalid component does not make its neighbours look unconnected.
        var nodes: [GraphNode] = []
        var ids: [String: (kind: ComponentKind, line: Int)] = [:]
        for kind in ComponentKind.allCases {
            let section = pipeline.value(sectionName(kind))
            guard let section, let entries = section.mapping() else { continue }
            for (id, keyMark, node) in entries.allEntries(naming: { "\(kind.rawValue) '\($0)'" }) {
                guard checkID(id, at: keyMark) else { continue }
                if let earlier = ids[id] {
                    log.error(
                        "duplicate component id '\(id)'", at: keyMark,
                        notes: [
                            "'\(id)' is already a \(earlier.kind.rawValue) at line \(earlier.line); "
                                + "ids must be unique across sources, transforms and sinks"
                        ])
                    continue
                }
                ids[id] = (kind, keyMark.line)
                let (node, component) = readComponent(id: id, kind: kind, node: node, keyMark: keyMark)
                if let node { nodes.append(node) }
                if let component { components.append(component) }
            }
        }
        let stdoutSink = components.contains { $0.kind == .sink && $0.typeName == "stdout" }
        let metrics = readMetrics(pipeline.value("metrics"), eventsOnStandardOutput: stdoutSink)
        let api = pipeline.value("api").flatMap(readAPI)
        let testsNode = pipeline.value("tests")
        pipeline.finish()
        checkGraph(nodes, ids: ids, root: FilePosition(root.mark))
        let testNodes = nodes.map {
            ($0.id, PipelineTestReader.ComponentNode(kind: $0.kind, outputs: $0.outputs, inputs: $0.inputs))
        }
        let tests =
            testsNode.map {
                PipelineTestReader(components: Dictionary(testNodes, uniquingKeysWith: { first, _ in first }), log: log)
                    .read($0)
            } ?? []
        return PipelineDefinition(components: components, metrics: metrics, api: api, tests: tests)
    }

    private func sectionName(_ kind: ComponentKind) -> String { kind.rawValue + "s" }

    private func checkID(_ id: String, at mark: FilePosition) -> Bool {
        let valid =
            !id.isEmpty
            && id.unicodeScalars.allSatisfy {
                $0.isASCII
                    && ($0.properties.isAlphabetic
                        || ("0"..."9").contains($0) || $0 == "_" || $0 == "-")
            }
        if !valid {
            log.error(
                "invalid component id '\(id)'", at: mark,
                notes: ["ids use letters, digits, '_' and '-'"])
        }
        return valid
    }

    // MARK: - Components

    /// A component as the graph checks see it, whether or not its options were valid.
    private struct GraphNode {
        let id: String
        let kind: ComponentKind
        let inputs: [String]
        let mark: FilePosition
        /// Its named outputs, when its options were valid.
        var outputs: [String]?
    }

    /// Reads one component: its place in the graph when its inputs could be read, and its definition when
    /// everything about it is valid.
    private func readComponent(id: String, kind: ComponentKind, node: ConfigNode, keyMark: FilePosition)
        -> (GraphNode?, ComponentDefinition?)
    {
        guard let options = node.mapping() else { return (nil, nil) }
        var inputs: [String] = []
        var buffer: BufferPolicy?
        if kind != .source {
            inputs = readInputs(options, id: id, kind: kind)
            buffer = readBuffer(options.value("buffer"))
        }
        var graphNode = GraphNode(id: id, kind: kind, inputs: inputs, mark: keyMark)
        let typeNames = catalog.typeNames(of: kind)
        guard let typeNode = options.required("type", note: "expected one of: " + typeNames.joined(separator: ", ")),
            let typeName = typeNode.string()
        else { return (graphNode, nil) }
        let blueprint: ComponentBlueprint?
        do {
            blueprint = try catalog.configure(kind, typeName: typeName, options: options)
        } catch {
            // The reader recorded why; the unknown keys are still worth reporting.
            options.finish()
            return (graphNode, nil)
        }
        guard let blueprint else {
            log.error(
                "unknown \(kind.rawValue) type \(typeNode.shown(typeName))", at: typeNode.mark,
                notes: [Suggestion.expectedOneOf(typeNames, given: typeNode.isFromEnvironment ? nil : typeName)])
            return (graphNode, nil)
        }
        options.finish()
        graphNode.outputs = blueprint.outputs
        var written = JSONObject()
        if case .object(let object) = node.writtenValue {
            written = JSONObject(uniqueFields: object.fields.filter { !["type", "inputs", "buffer"].contains($0.key) })
        }
        let definition = ComponentDefinition(
            id: id, kind: kind, typeName: typeName, inputs: inputs,
            buffer: buffer ?? (kind == .source ? nil : .default),
            blueprint: blueprint, writtenOptions: written, mark: keyMark)
        return (graphNode, definition)
    }

    private func readInputs(_ options: ConfigMapping, id: String, kind: ComponentKind) -> [String] {
        guard
            let node = options.required(
                "inputs", note: "add 'inputs: [ID, ...]' naming the sources or transforms it reads from"),
            let list = node.stringList()
        else { return [] }
        if list.isEmpty {
            log.error(
                "\(kind.rawValue) '\(id)' has an empty 'inputs' list", at: node.mark,
                notes: ["name at least one source or transform to read from"])
        }
        var seen: Set<String> = []
        var inputs: [String] = []
        for (input, mark) in list {
            if !seen.insert(input).inserted {
                log.error("input '\(input)' is listed twice for \(kind.rawValue) '\(id)'", at: mark)
                continue
            }
            inputs.append(input)
            inputMarks[Key(id: id, input: input)] = mark
        }
        return inputs
    }

    private func readBuffer(_ node: ConfigNode?) -> BufferPolicy? {
        guard let node else { return nil }
        if node.isWord("unbounded") { return .unbounded }
        if case .scalar = node.node.content {
            log.error(
                "expected a mapping or 'unbounded' for 'buffer', found \(node.node.kindDescription)", at: node.mark,
                notes: ["write 'buffer: {max_events: 1000, when_full: block}' or 'buffer: unbounded'"])
            return nil
        }
        guard let buffer = node.mapping() else { return nil }
        let maxEvents =
            buffer.value("max_events")?.int(in: 1...BufferPolicy.maxEventsLimit) ?? BufferPolicy.defaultMaxEvents
        let whenFull = buffer.value("when_full")?.choice(WhenFull.self) ?? .block
        let keyNode = buffer.value("key")
        buffer.finish()
        if let keyNode, whenFull != .latest_per_key {
            log.error("'key' is only for 'when_full: latest_per_key'", at: keyNode.mark)
        }
        switch whenFull {
        case .block: return .block(maxEvents: maxEvents)
        case .drop_newest: return .dropNewest(maxEvents: maxEvents)
        case .drop_oldest: return .dropOldest(maxEvents: maxEvents)
        case .latest_per_key:
            guard let keyNode else {
                log.error(
                    "a latest_per_key buffer needs a 'key'", at: buffer.mark,
                    notes: ["for example 'buffer: {max_events: 1000, when_full: latest_per_key, key: .device}'"])
                return nil
            }
            return keyNode.expression().map { .latestPerKey(maxEvents: maxEvents, key: $0) }
        }
    }

    // MARK: - Metrics

    /// The `metrics` section. Reports go to standard output unless a `stdout` sink writes events there: then, unless
    /// `to` says otherwise, to standard error, so that the events a reader takes from standard output are only events.
    private func readMetrics(_ node: ConfigNode?, eventsOnStandardOutput: Bool) -> MetricsSettings {
        var settings = MetricsSettings(destination: eventsOnStandardOutput ? .stderr : .stdout)
        guard let node, let metrics = node.mapping() else { return settings }
        if let interval = metrics.value("interval_secs")?.double(in: 0...86_400) { settings.intervalSecs = interval }
        if let to = metrics.value("to")?.string() {
            if to.isEmpty {
                log.error("'to' must be stdout, stderr or a file path", at: metrics.value("to")?.mark)
            } else {
                settings.destination = MetricsSettings.Destination(to)
            }
        }
        if let format = metrics.value("format")?.choice(MetricsSettings.Format.self) { settings.format = format }
        metrics.finish()
        return settings
    }

    private func readAPI(_ node: ConfigNode) -> APISettings? {
        guard let api = node.mapping() else { return nil }
        var settings = APISettings()
        if let (host, port) = api.value("listen")?.listenAddress() {
            settings.host = host
            settings.port = port
        }
        if let tokenNode = api.value("token"), let token = tokenNode.string() {
            if token.isEmpty {
                log.error(
                    "the api token is empty", at: tokenNode.mark,
                    notes: ["give a token, or leave 'token' out to serve without one (on loopback only)"])
            }
            settings.token = token
        }
        if ["0.0.0.0", "::", "*"].contains(settings.host), settings.token == nil {
            log.warning(
                "the api listens on all interfaces without a token", at: api.value("listen")?.mark,
                notes: ["anyone who can reach this machine can read the pipeline and its events; add a token"])
        }
        api.finish()
        return settings
    }

    // MARK: - Graph

    /// Where each input reference was written, for messages about the edge rather than the component.
    private struct Key: Hashable {
        let id: String
        let input: String
    }

    private var inputMarks: [Key: FilePosition] = [:]

    private func checkGraph(
        _ components: [GraphNode], ids: [String: (kind: ComponentKind, line: Int)], root: FilePosition
    ) {
        let producers = ids.filter { $0.value.kind != .sink }.keys.sorted()
        let outputs = Dictionary(components.map { ($0.id, $0.outputs) }, uniquingKeysWith: { first, _ in first })
        for component in components {
            for input in component.inputs {
                let mark = inputMarks[Key(id: component.id, input: input)] ?? component.mark
                let reference = InputReference(input)
                guard let target = ids[reference.id] else {
                    log.error(
                        "unknown input '\(input)' for \(component.kind.rawValue) '\(component.id)'", at: mark,
                        notes: [
                            producers.isEmpty
                                ? "the pipeline has no sources or transforms to read from"
                                : Suggestion.expectedOneOf(producers, given: input)
                        ])
                    continue
                }
                if target.kind == .sink {
                    log.error(
                        "'\(input)' is a sink and cannot be an input", at: mark,
                        notes: ["inputs name sources or transforms: " + producers.joined(separator: ", ")])
                }
                if reference.id == component.id {
                    log.error("\(component.kind.rawValue) '\(component.id)' lists itself as an input", at: mark)
                }
                // Named outputs, once the target's options were read (else its own errors say what is wrong).
                guard target.kind != .sink, let named = outputs[reference.id] ?? nil else { continue }
                if let problem = reference.outputProblem(named: named, verb: "read") {
                    log.error(problem.message, at: mark, notes: [problem.note])
                }
            }
        }
        checkCycles(components)
        if !ids.values.contains(where: { $0.kind == .source }) {
            log.error(
                "the pipeline has no sources", at: root,
                notes: ["add a 'sources' section, for example 'sources: {in: {type: stdin}}'"])
        }
        if !ids.values.contains(where: { $0.kind == .sink }) {
            log.error(
                "the pipeline has no sinks", at: root,
                notes: ["add a 'sinks' section, for example 'sinks: {out: {type: stdout, inputs: [in]}}'"])
        }
        let read = Set(components.flatMap(\.inputs))
        let readIDs = Set(read.map { InputReference($0).id })
        for component in components where component.kind != .sink {
            guard readIDs.contains(component.id) else {
                log.error(
                    "\(component.kind.rawValue) '\(component.id)' is not an input of any transform or sink",
                    at: component.mark, notes: ["its events would go nowhere; name it in some component's 'inputs'"])
                continue
            }
            // Every named output but `_unmatched` (whose events are counted as unmatched when nobody reads them).
            for output in component.outputs ?? []
            where output != "_unmatched" && !read.contains("\(component.id).\(output)") {
                log.error(
                    "output '\(component.id).\(output)' is not an input of any transform or sink", at: component.mark,
                    notes: ["its events would go nowhere; name it in some component's 'inputs'"])
            }
        }
    }

    /// Reports each cycle among transforms once, at the first transform of the cycle in file order.
    private func checkCycles(_ components: [GraphNode]) {
        let transforms = Dictionary(
            components.filter { $0.kind == .transform }.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var state: [String: Bool] = [:]  // false: on the current path; true: finished
        var reported: Set<String> = []
        func visit(_ id: String, path: [String]) {
            if state[id] == true { return }
            if state[id] == false {
                guard let start = path.firstIndex(of: id) else { return }
                let cycle = Array(path[start...])
                guard reported.isDisjoint(with: cycle), let first = transforms[cycle[0]] else { return }
                reported.formUnion(cycle)
                let names = (cycle + [id]).map { "'\($0)'" }.joined(separator: " -> ")
                log.error(
                    "transforms \(names) form a cycle", at: first.mark,
                    notes: ["events would circle forever; a pipeline must flow from sources to sinks"])
                return
            }
            state[id] = false
            for input in (transforms[id]?.inputs ?? []).map({ InputReference($0).id }) where transforms[input] != nil {
                visit(input, path: path + [id])
            }
            state[id] = true
        }
        for component in components where component.kind == .transform { visit(component.id, path: []) }
    }
}
