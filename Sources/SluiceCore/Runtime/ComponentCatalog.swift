/// Every component type a pipeline may name, by kind; the command line composes it from the component modules.
public struct ComponentCatalog: Sendable {
    /// Source types.
    public let sources: [any SourceConfig.Type]
    /// Transform types.
    public let transforms: [any TransformConfig.Type]
    /// Sink types.
    public let sinks: [any SinkConfig.Type]

    public init(
        sources: [any SourceConfig.Type], transforms: [any TransformConfig.Type], sinks: [any SinkConfig.Type]
    ) {
        self.sources = sources
        self.transforms = transforms
        self.sinks = sinks
    }

    /// The type names of `kind`, sorted, for messages.
    public func typeNames(of kind: ComponentKind) -> [String] {
        switch kind {
        case .source: sources.map { $0.typeName }.sorted()
        case .transform: transforms.map { $0.typeName }.sorted()
        case .sink: sinks.map { $0.typeName }.sorted()
        }
    }

    /// Every type as kind, name and summary, for `sluice list`.
    public var entries: [(kind: ComponentKind, typeName: String, summary: String)] {
        sources.map { (.source, $0.typeName, $0.summary) } + transforms.map { (.transform, $0.typeName, $0.summary) }
            + sinks.map { (.sink, $0.typeName, $0.summary) }
    }

    /// Reads the options of type `typeName` of `kind`, or returns `nil` when no such type exists.
    func configure(_ kind: ComponentKind, typeName: String, options: ConfigMapping) -> ComponentBlueprint? {
        switch kind {
        case .source: sources.first { $0.typeName == typeName }.map { .source($0.init(reading: options)) }
        case .transform: transforms.first { $0.typeName == typeName }.map { .transform($0.init(reading: options)) }
        case .sink: sinks.first { $0.typeName == typeName }.map { .sink($0.init(reading: options)) }
        }
    }
}

/// A component's validated configuration, ready to be made into a running component.
public enum ComponentBlueprint: Sendable {
    case source(any SourceConfig)
    case transform(any TransformConfig)
    case sink(any SinkConfig)
}
