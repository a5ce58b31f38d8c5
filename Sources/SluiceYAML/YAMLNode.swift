/// A position in a YAML document, 1-based, as a person counts lines and characters.
public struct YAMLMark: Sendable, Hashable, CustomStringConvertible {
    /// The line, starting at 1.
    public let line: Int
    /// The character column, starting at 1.
    public let column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public var description: String { "\(line):\(column)" }
}

/// A node of a parsed YAML document that remembers where it was written.
///
/// Mappings keep every pair in document order, duplicates included, so that readers can report a duplicate key
/// at its own position instead of silently keeping one of them.
public struct YAMLNode: Sendable {
    /// What a node holds.
    public enum Content: Sendable {
        /// A scalar: its text exactly as resolved by the YAML parser.
        case scalar(YAMLScalar)
        /// A sequence of nodes, in order.
        case sequence([YAMLNode])
        /// A mapping, as key-value pairs in document order.
        case mapping([YAMLPair])
    }

    /// The node's content.
    public let content: Content
    /// Where the node starts.
    public let mark: YAMLMark

    public init(_ content: Content, at mark: YAMLMark) {
        self.content = content
        self.mark = mark
    }
}

/// A scalar's text and the facts needed to resolve its type and to point into it.
public struct YAMLScalar: Sendable, Hashable {
    /// How a scalar was written.
    public enum Style: Sendable, Hashable {
        case plain, singleQuoted, doubleQuoted, literal, folded
    }

    /// The scalar's text, after YAML unescaping and folding.
    public let value: String
    /// How it was written.
    public let style: Style
    /// An explicit tag such as `!!str`, if one was written.
    public let tag: String?

    public init(_ value: String, style: Style = .plain, tag: String? = nil) {
        self.value = value
        self.style = style
        self.tag = tag
    }

    /// True when the scalar was written without quotes; only plain scalars resolve to numbers, booleans and null.
    public var isPlain: Bool { style == .plain }
}

/// One key-value pair of a mapping.
public struct YAMLPair: Sendable {
    /// The key node, usually a scalar.
    public let key: YAMLNode
    /// The value node.
    public let value: YAMLNode

    public init(key: YAMLNode, value: YAMLNode) {
        self.key = key
        self.value = value
    }
}

/// A document that libyaml could not parse, with the position of the problem.
public struct YAMLError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, in libyaml's words (for example "mapping values are not allowed in this context").
    public let message: String
    /// Where the problem was found.
    public let mark: YAMLMark
    /// What the parser was reading when it found the problem, if it said.
    public let context: String?

    public init(message: String, mark: YAMLMark, context: String? = nil) {
        self.message = message
        self.mark = mark
        self.context = context
    }

    public var description: String {
        if let context { return "\(mark): \(message) (\(context))" }
        return "\(mark): \(message)"
    }
}
