internal import CLibYAML

/// Parses YAML (and therefore JSON) text into ``YAMLNode`` trees with libyaml.
public enum YAMLParser {
    /// The deepest nesting accepted; deeper documents are rejected rather than risking the stack.
    public static let maxDepth = 200
    /// The most nodes aliases may add to a document in all. Each alias is a copy of its anchored node, so a few
    /// lines of aliases of aliases make billions of nodes (the "billion laughs"), which every reader of the tree
    /// would then walk; written out, a million nodes would be a file of megabytes.
    public static let maxAliasedNodes = 1_000_000

    /// Parses the first document of `text`; returns `nil` when the text holds no document at all.
    ///
    /// Aliases are expanded to copies of the anchored node, up to ``maxAliasedNodes`` nodes in all. A second
    /// document is an error, because a pipeline file describes one pipeline.
    public static func parse(_ text: String) throws(YAMLError) -> YAMLNode? {
        var bytes = Array(text.utf8)
        bytes.append(0)
        return try bytes.withUnsafeBufferPointer { (buffer) throws(YAMLError) -> YAMLNode? in
            var reader = EventReader(input: buffer)
            defer { reader.close() }
            return try reader.readStream()
        }
    }
}

/// Pulls libyaml events and builds nodes; owns the `yaml_parser_t` and frees it in ``close()``.
private struct EventReader {
    private var parser = yaml_parser_t()
    /// Each anchored node and how many nodes it holds, itself included.
    private var anchors: [String: (node: YAMLNode, size: Int)] = [:]
    /// Nodes read so far, aliases counted as the nodes they copy.
    private var nodes = 0
    private var aliasedNodes = 0

    init(input: UnsafeBufferPointer<UInt8>) {
        yaml_parser_initialize(&parser)
        // The trailing NUL is not part of the document.
        yaml_parser_set_input_string(&parser, input.baseAddress, input.count - 1)
    }

    mutating func close() {
        yaml_parser_delete(&parser)
    }

    mutating func readStream() throws(YAMLError) -> YAMLNode? {
        var event = try next()
        defer { yaml_event_delete(&event) }
        guard event.type == YAML_STREAM_START_EVENT else { throw unexpected(event) }
        var start = try next()
        defer { yaml_event_delete(&start) }
        if start.type == YAML_STREAM_END_EVENT { return nil }
        guard start.type == YAML_DOCUMENT_START_EVENT else { throw unexpected(start) }
        var first = try next()
        defer { yaml_event_delete(&first) }
        let root = try readNode(from: &first, depth: 0)
        var end = try next()
        defer { yaml_event_delete(&end) }
        guard end.type == YAML_DOCUMENT_END_EVENT else { throw unexpected(end) }
        var after = try next()
        defer { yaml_event_delete(&after) }
        if after.type == YAML_DOCUMENT_START_EVENT {
            throw YAMLError(
                message: "a second document is not allowed; a pipeline file holds one pipeline",
                mark: mark(after.start_mark))
        }
        return root
    }

    /// Builds the node that starts with `event`, reading its children.
    private mutating func readNode(from event: inout yaml_event_t, depth: Int) throws(YAMLError) -> YAMLNode {
        let at = mark(event.start_mark)
        guard depth < YAMLParser.maxDepth else {
            throw YAMLError(message: "nesting deeper than \(YAMLParser.maxDepth) levels", mark: at)
        }
        let firstNode = nodes
        nodes += 1
        switch event.type {
        case YAML_SCALAR_EVENT:
            let data = event.data.scalar
            let value = string(data.value, length: data.length)
            let style: YAMLScalar.Style
            switch data.style {
            case YAML_SINGLE_QUOTED_SCALAR_STYLE: style = .singleQuoted
            case YAML_DOUBLE_QUOTED_SCALAR_STYLE: style = .doubleQuoted
            case YAML_LITERAL_SCALAR_STYLE: style = .literal
            case YAML_FOLDED_SCALAR_STYLE: style = .folded
            default: style = .plain
            }
            let scalar = YAMLScalar(value, style: style, tag: optionalString(data.tag))
            let node = YAMLNode(.scalar(scalar), at: at)
            remember(node, anchor: data.anchor, size: nodes - firstNode)
            return node
        case YAML_ALIAS_EVENT:
            let name = optionalString(event.data.alias.anchor) ?? ""
            guard let anchored = anchors[name] else {
                throw YAMLError(message: "unknown alias '*\(name)'", mark: at)
            }
            // The alias stands for its node's nodes, not one more.
            nodes += anchored.size - 1
            aliasedNodes += anchored.size
            guard aliasedNodes <= YAMLParser.maxAliasedNodes else {
                throw YAMLError(
                    message: "aliases expand to more than \(YAMLParser.maxAliasedNodes) nodes; write the values out",
                    mark: at)
            }
            return YAMLNode(anchored.node.content, at: at)
        case YAML_SEQUENCE_START_EVENT:
            let anchor = event.data.sequence_start.anchor
            var items: [YAMLNode] = []
            while true {
                var child = try next()
                defer { yaml_event_delete(&child) }
                if child.type == YAML_SEQUENCE_END_EVENT { break }
                items.append(try readNode(from: &child, depth: depth + 1))
            }
            let node = YAMLNode(.sequence(items), at: at)
            remember(node, anchor: anchor, size: nodes - firstNode)
            return node
        case YAML_MAPPING_START_EVENT:
            let anchor = event.data.mapping_start.anchor
            var pairs: [YAMLPair] = []
            while true {
                var keyEvent = try next()
                defer { yaml_event_delete(&keyEvent) }
                if keyEvent.type == YAML_MAPPING_END_EVENT { break }
                let key = try readNode(from: &keyEvent, depth: depth + 1)
                var valueEvent = try next()
                defer { yaml_event_delete(&valueEvent) }
                let value = try readNode(from: &valueEvent, depth: depth + 1)
                pairs.append(YAMLPair(key: key, value: value))
            }
            let node = YAMLNode(.mapping(pairs), at: at)
            remember(node, anchor: anchor, size: nodes - firstNode)
            return node
        default:
            throw unexpected(event)
        }
    }

    private mutating func remember(_ node: YAMLNode, anchor: UnsafeMutablePointer<yaml_char_t>?, size: Int) {
        if let name = optionalString(anchor) { anchors[name] = (node, size) }
    }

    /// The one place a libyaml status is checked: a failed parse becomes a ``YAMLError`` at libyaml's mark.
    private mutating func next() throws(YAMLError) -> yaml_event_t {
        var event = yaml_event_t()
        guard yaml_parser_parse(&parser, &event) == 1 else {
            let problem = parser.problem.map { String(cString: $0) } ?? "invalid YAML"
            let context = parser.context.map { String(cString: $0) }
            throw YAMLError(message: problem, mark: mark(parser.problem_mark), context: context)
        }
        return event
    }

    private func unexpected(_ event: yaml_event_t) -> YAMLError {
        YAMLError(message: "unexpected YAML structure", mark: mark(event.start_mark))
    }

    private func mark(_ mark: yaml_mark_t) -> YAMLMark {
        YAMLMark(line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }

    private func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?, length: Int) -> String {
        guard let pointer else { return "" }
        return String(decoding: UnsafeBufferPointer(start: pointer, count: length), as: UTF8.self)
    }

    private func optionalString(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        guard let pointer else { return nil }
        return String(cString: pointer)
    }
}
