/// A validated pipeline: its components with their edges and buffers, and how metrics are reported.
public struct PipelineDefinition: Sendable {
    /// Every component: sources first, then transforms, then sinks, each in file order.
    public var components: [ComponentDefinition] {
        didSet { readers = Readers(components) }
    }
    /// Metrics settings from the file; the command line may override them.
    public var metrics: MetricsSettings
    /// The HTTP API, when the file asks for one.
    public var api: APISettings?
    /// The file's `tests:` section, which `sluice test` runs.
    public var tests: [PipelineTest] = []
    /// Who reads each component, kept with `components`: asked of every component while a pipeline starts and at
    /// every reload, a search of all components each time made a 1,000-stage pipeline take 1.8 s to start.
    private var readers: Readers

    init(components: [ComponentDefinition], metrics: MetricsSettings, api: APISettings?, tests: [PipelineTest]) {
        self.components = components
        self.metrics = metrics
        self.api = api
        self.tests = tests
        readers = Readers(components)
    }

    /// The ids of the components that read output `output` of `id` (its only output when `nil`), in definition
    /// order.
    public func consumers(of id: String, output: String? = nil) -> [String] {
        readers.byReference[output.map { "\(id).\($0)" } ?? id] ?? []
    }

    /// The ids of the components that read any output of `id`, in definition order.
    public func allConsumers(of id: String) -> [String] {
        readers.byComponent[id] ?? []
    }

    /// The readers of every input reference (`id` or `id.output`) and of every component (through any output), each
    /// list in definition order and without repeats.
    private struct Readers: Sendable {
        var byReference: [String: [String]] = [:]
        var byComponent: [String: [String]] = [:]

        init(_ components: [ComponentDefinition]) {
            for component in components {
                for input in component.inputs {
                    // A component's entries are added together, so a repeat is the last one added.
                    if byReference[input]?.last != component.id { byReference[input, default: []].append(component.id) }
                    let read = InputReference(input).id
                    if byComponent[read]?.last != component.id { byComponent[read, default: []].append(component.id) }
                }
            }
        }
    }

    /// The named outputs of `component` that some component reads (``TransformContext/readOutputs``).
    func readOutputs(of component: ComponentDefinition) -> Set<String> {
        Set(component.blueprint.outputs.filter { !consumers(of: component.id, output: $0).isEmpty })
    }

    /// The ids of the components reachable from `starts` (themselves included), each after every reachable
    /// component it reads from.
    func upstreamFirst(from starts: [String]) -> [String] {
        var order: [String] = []
        var visited: Set<String> = []
        func visit(_ id: String) {
            guard visited.insert(id).inserted else { return }
            for consumer in allConsumers(of: id) { visit(consumer) }
            order.append(id)
        }
        for start in starts { visit(start) }
        return order.reversed()
    }
}

/// An entry of `inputs`: a component id, or `<id>.<output>` for a named output of a transform (a `route`).
public struct InputReference: Sendable, Hashable {
    /// The component read from.
    public let id: String
    /// Its named output, if one is read.
    public let output: String?

    /// Splits at the first dot; component ids cannot contain one.
    public init(_ text: String) {
        if let dot = text.firstIndex(of: ".") {
            id = String(text[..<dot])
            output = String(text[text.index(after: dot)...])
        } else {
            id = text
            output = nil
        }
    }
}

extension InputReference {
    /// What is wrong with this reference to a component whose named outputs are `named`, as a message and a note
    /// that say what to `verb` instead (`read`, `check`); `nil` when it names an output that exists, or names none
    /// of a component that has none.
    func outputProblem(named: [String], verb: String) -> (message: String, note: String)? {
        let shown = named.map { "\(id).\($0)" }
        switch output {
        case nil where !named.isEmpty:
            return (
                "'\(id)' has named outputs; \(verb) one of them", "expected one of: " + shown.joined(separator: ", ")
            )
        case let output? where named.isEmpty:
            return ("'\(id)' has no output named '\(output)'", "only a route has named outputs; \(verb) '\(id)'")
        case let output? where !named.contains(output):
            return ("unknown output '\(output)' of '\(id)'", Suggestion.expectedOneOf(shown, given: "\(id).\(output)"))
        default:
            return nil
        }
    }
}

/// One component of a pipeline.
public struct ComponentDefinition: Sendable {
    /// Its id, the key it was written under.
    public let id: String
    /// Source, transform or sink.
    public let kind: ComponentKind
    /// Its `type`.
    public let typeName: String
    /// The ids it reads from; empty for sources.
    public let inputs: [String]
    /// Its input buffer's policy; `nil` for sources, which have no input buffer.
    public let buffer: BufferPolicy?
    /// Its type-specific configuration.
    public let blueprint: ComponentBlueprint
    /// Its options as written (see ``ConfigNode/writtenValue``), without `type`, `inputs` and `buffer`.
    public let writtenOptions: JSONObject
    /// Where it was defined, for messages about the graph.
    let mark: FilePosition
}

/// The `api` section: where the HTTP API (metrics, health, the pipeline, live reports, taps, the dashboard)
/// listens, and the token it asks for.
public struct APISettings: Sendable, Equatable {
    /// What to bind; 127.0.0.1 for a bare port.
    public var host: String
    /// The port; 0 picks a free one, reported on stderr.
    public var port: Int
    /// When set, every request must carry it (`Authorization: Bearer <token>`, or the dashboard's cookie). It may be
    /// a secret: nothing prints it.
    public var token: String?

    /// Settings as a file gives them; the default is 127.0.0.1:8686 without a token.
    public init(host: String = "127.0.0.1", port: Int = 8686, token: String? = nil) {
        self.host = host
        self.port = port
        self.token = token
    }
}

/// Where and how metrics reports are written.
public struct MetricsSettings: Sendable, Equatable {
    /// How a report is laid out.
    public enum Format: String, ConfigChoice {
        /// A table for people.
        case text
        /// One JSON object per line.
        case json
        /// Prometheus text exposition.
        case prometheus
    }

    /// Where reports go.
    public enum Destination: Sendable, Equatable {
        /// Standard output (shared with a `stdout` sink only when the file says so).
        case stdout
        /// Standard error.
        case stderr
        /// A file at this path, replaced at the start of a run.
        case file(String)

        /// Reads `stdout`, `stderr` or a path.
        public init(_ text: String) {
            switch text {
            case "stdout": self = .stdout
            case "stderr": self = .stderr
            default: self = .file(text)
            }
        }
    }

    /// Seconds between reports; 0 means only the final report.
    public var intervalSecs: Double
    /// Where reports go.
    public var destination: Destination
    /// How reports are laid out.
    public var format: Format

    /// Settings as a file gives them; the defaults are a text table on stdout every second (the loader makes it
    /// stderr when a `stdout` sink writes events).
    public init(intervalSecs: Double = 1, destination: Destination = .stdout, format: Format = .text) {
        self.intervalSecs = intervalSecs
        self.destination = destination
        self.format = format
    }
}
