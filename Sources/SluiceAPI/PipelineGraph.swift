public import SluiceCore

/// A pipeline as a graph: its components, the edges between them (named outputs included) and each input
/// buffer, for the API's `/api/pipeline` and `sluice graph`.
public struct PipelineGraph: Sendable {
    /// One edge: `from` (with its named output, if one) feeds `to`'s input buffer.
    public struct Edge: Sendable, Equatable {
        public let from: String
        public let output: String?
        public let to: String
    }

    public let definition: PipelineDefinition

    public init(_ definition: PipelineDefinition) { self.definition = definition }

    /// Every edge, in the order of the consumers and their `inputs`.
    public var edges: [Edge] {
        definition.components.flatMap { component in
            component.inputs.map { input in
                let reference = InputReference(input)
                return Edge(from: reference.id, output: reference.output, to: component.id)
            }
        }
    }

    /// `/api/pipeline`: components (id, kind, type, inputs, options as written, so without any value that came
    /// from the environment, the buffer), and edges.
    public var json: JSONValue {
        let components = definition.components.map { component -> JSONValue in
            var object = JSONObject()
            object["id"] = .string(component.id)
            object["kind"] = .string(component.kind.rawValue)
            object["type"] = .string(component.typeName)
            object["inputs"] = .array(component.inputs.map { .string($0) })
            object["outputs"] = .array(component.blueprint.outputs.map { .string($0) })
            object["options"] = .object(component.writtenOptions)
            object["buffer"] = component.buffer.map(Self.buffer) ?? .null
            return .object(object)
        }
        let edges = edges.map { edge -> JSONValue in
            ["from": .string(edge.from), "output": edge.output.map { .string($0) } ?? .null, "to": .string(edge.to)]
        }
        return ["components": .array(components), "edges": .array(edges)]
    }

    private static func buffer(_ policy: BufferPolicy) -> JSONValue {
        ["when_full": .string(policy.whenFull), "max_events": policy.maxEvents.map { .int(Int64($0)) } ?? .null]
    }

    /// Graphviz DOT: sources, transforms and sinks in ranks from left to right, each edge labelled with the
    /// consumer's buffer policy (and the named output it reads).
    public var dot: String {
        var lines = ["digraph pipeline {", "  rankdir=LR;", "  node [fontname=\"Helvetica\", fontsize=11];"]
        for component in definition.components {
            let shape =
                switch component.kind {
                case .source: "cds"
                case .transform: "box"
                case .sink: "folder"
                }
            lines.append(
                "  \(quoted(component.id)) [shape=\(shape), label=\(quoted("\(component.id)\\n\(component.typeName)"))];"
            )
        }
        for edge in edges {
            lines.append("  \(quoted(edge.from)) -> \(quoted(edge.to)) [label=\(quoted(label(edge)))];")
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    /// A Mermaid flowchart (GitHub renders it in Markdown): the same nodes and labelled edges as ``dot``.
    public var mermaid: String {
        var lines = ["flowchart LR"]
        for component in definition.components {
            let text = "\(component.id)<br/>\(component.typeName)"
            let node =
                switch component.kind {
                case .source: "\(component.id)([\"\(text)\"])"
                case .transform: "\(component.id)[\"\(text)\"]"
                case .sink: "\(component.id)[(\"\(text)\")]"
                }
            lines.append("  " + node)
        }
        for edge in edges {
            lines.append("  \(edge.from) -->|\"\(label(edge))\"| \(edge.to)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private func label(_ edge: Edge) -> String {
        let policy = definition.components.first { $0.id == edge.to }?.buffer
        let buffer = policy.map { policy in
            policy.whenFull + (policy.maxEvents.map { " \($0)" } ?? "")
        }
        return [edge.output, buffer].compactMap { $0 }.joined(separator: ": ")
    }

    private func quoted(_ text: String) -> String {
        "\"" + text.replacing("\"", with: "\\\"") + "\""
    }
}
