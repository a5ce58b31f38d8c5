public import SluiceCore

/// Builds a pipeline in code, component by component, with the options a pipeline file would give them; the
/// result is checked exactly as a file is (``Pipeline/init(yaml:environment:)``), so a mistake is reported the
/// same way, at the line of the component in ``text``.
///
/// ```swift
/// var builder = PipelineBuilder()
/// builder.source("readings", type: "host")
/// builder.transform("hot", type: "filter", inputs: ["readings"], options: ["condition": ".temperature > 30"])
/// builder.sink("alerts", type: "host", inputs: ["hot"], buffer: ["max_events": 100, "when_full": "drop_oldest"])
/// let pipeline = try builder.build()
/// ```
public struct PipelineBuilder: Sendable {
    private var sections: [ComponentKind: [(id: String, options: JSONObject)]] = [:]

    /// An empty pipeline; add components, then ``build(environment:)``.
    public init() {}

    /// Adds a source of type `type` with `options` (its keys as in a file, without `type`).
    public mutating func source(_ id: String, type: String, options: JSONObject = [:]) {
        add(.source, id, type: type, inputs: nil, buffer: nil, options: options)
    }

    /// Adds a transform reading `inputs`; `buffer` as in a file (`["max_events": 500, "when_full": "block"]`).
    public mutating func transform(
        _ id: String, type: String, inputs: [String], buffer: JSONValue? = nil, options: JSONObject = [:]
    ) {
        add(.transform, id, type: type, inputs: inputs, buffer: buffer, options: options)
    }

    /// Adds a sink reading `inputs`.
    public mutating func sink(
        _ id: String, type: String, inputs: [String], buffer: JSONValue? = nil, options: JSONObject = [:]
    ) {
        add(.sink, id, type: type, inputs: inputs, buffer: buffer, options: options)
    }

    private mutating func add(
        _ kind: ComponentKind, _ id: String, type: String, inputs: [String]?, buffer: JSONValue?, options: JSONObject
    ) {
        var component: JSONObject = ["type": .string(type)]
        if let inputs { component["inputs"] = .array(inputs.map(JSONValue.string)) }
        if let buffer { component["buffer"] = buffer }
        for field in options.fields { component[field.key] = field.value }
        sections[kind, default: []].append((id, component))
    }

    /// The pipeline as a file would hold it: JSON (which is YAML), one component per line.
    public var text: String {
        var lines: [String] = ["{"]
        let kinds = ComponentKind.allCases.filter { sections[$0] != nil }
        for (kindIndex, kind) in kinds.enumerated() {
            lines.append(Self.json(.string(kind.rawValue + "s")) + ": {")
            let components = sections[kind] ?? []
            for (index, component) in components.enumerated() {
                let comma = index == components.count - 1 ? "" : ","
                lines.append(
                    "  " + Self.json(.string(component.id)) + ": " + Self.json(.object(component.options)) + comma)
            }
            lines.append(kindIndex == kinds.count - 1 ? "}" : "},")
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Checks the components and makes the pipeline; throws every problem found.
    public func build(environment: [String: String] = [:]) throws(PipelineError) -> Pipeline {
        try Pipeline(yaml: text, environment: environment)
    }

    private static func json(_ value: JSONValue) -> String {
        var bytes: [UInt8] = []
        JSONWriter.write(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}
