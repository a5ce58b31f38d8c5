/// A component type a pipeline may name: its kind, name and summary, how its options are read, and how a running
/// component is made from them.
///
/// A type whose config makes its own component is registered as `.source(MyConfig.self)` (or `.transform`,
/// `.sink`). A type that needs something of the process (the `stdin` source its descriptor) is registered with a
/// `make` closure that captures it, so that no other component is handed it.
public struct ComponentType: Sendable {
    /// Source, transform or sink.
    public let kind: ComponentKind
    /// The word after `type:`.
    public let typeName: String
    /// One line for `sluice list`.
    public let summary: String
    let configure: @Sendable (ConfigMapping) throws(InvalidConfig) -> ComponentBlueprint

    private init<Config: ComponentConfig>(
        _ kind: ComponentKind, _ config: Config.Type, maker: @escaping @Sendable (Config) -> ComponentBlueprint.Maker
    ) {
        self.kind = kind
        typeName = Config.typeName
        summary = Config.summary
        configure = { (options) throws(InvalidConfig) in
            let read = try Config(reading: options)
            return ComponentBlueprint(
                config: read, outputs: (read as? any TransformConfig)?.outputs ?? [], maker: maker(read))
        }
    }

    /// A source type whose config makes its own source.
    public static func source<Config: SourceConfig>(_ config: Config.Type) -> ComponentType {
        source(config) { $0.makeSource() }
    }

    /// A source type whose running source is made by `make` from the config read.
    public static func source<Config: ComponentConfig>(
        _ config: Config.Type, make: @escaping @Sendable (Config) -> any Source
    ) -> ComponentType {
        ComponentType(.source, config) { read in .source { make(read) } }
    }

    /// A transform type.
    public static func transform<Config: TransformConfig>(_ config: Config.Type) -> ComponentType {
        ComponentType(.transform, config) { read in .transform { read.makeTransform($0) } }
    }

    /// A sink type whose config makes its own sink.
    public static func sink<Config: SinkConfig>(_ config: Config.Type) -> ComponentType {
        sink(config) { $0.makeSink() }
    }

    /// A sink type whose running sink is made by `make` from the config read.
    public static func sink<Config: ComponentConfig>(
        _ config: Config.Type, make: @escaping @Sendable (Config) -> any Sink
    ) -> ComponentType {
        ComponentType(.sink, config) { read in .sink { make(read) } }
    }
}

/// Every component type a pipeline may name; the command line composes it from the component modules.
public struct ComponentCatalog: Sendable {
    /// The types, in the order `sluice list` shows them.
    public let types: [ComponentType]

    /// A catalog of `types`, in the order `sluice list` shows them.
    public init(_ types: [ComponentType]) {
        self.types = types
    }

    /// The type names of `kind`, sorted, for messages.
    public func typeNames(of kind: ComponentKind) -> [String] {
        types.filter { $0.kind == kind }.map(\.typeName).sorted()
    }

    /// Reads the options of type `typeName` of `kind`: `nil` when no such type exists, and a throw (after the
    /// diagnostics were recorded) when the options are not valid.
    func configure(_ kind: ComponentKind, typeName: String, options: ConfigMapping) throws(InvalidConfig)
        -> ComponentBlueprint?
    {
        guard let type = types.first(where: { $0.kind == kind && $0.typeName == typeName }) else { return nil }
        return try type.configure(options)
    }
}

/// A component's validated configuration, ready to be made into a running component.
public struct ComponentBlueprint: Sendable {
    /// The options as read.
    public let config: any ComponentConfig
    /// A transform's named outputs; empty when it has one output.
    public let outputs: [String]
    let maker: Maker

    /// How the running component is made; one case per kind, so a blueprint cannot make the wrong kind.
    enum Maker: Sendable {
        case source(@Sendable () -> any Source)
        case transform(@Sendable (TransformContext) -> any Transform)
        case sink(@Sendable () -> any Sink)

        /// The kind of component it makes.
        var kind: ComponentKind {
            switch self {
            case .source: .source
            case .transform: .transform
            case .sink: .sink
            }
        }
    }
}
