/// Where a component sits in a pipeline.
public enum ComponentKind: String, Sendable, CaseIterable {
    /// Brings events into the pipeline.
    case source
    /// Changes, drops or adds events between sources and sinks.
    case transform
    /// Takes events out of the pipeline.
    case sink
}

/// The options of one component type, read from its YAML mapping; each type has one, beside its implementation.
///
/// `init(reading:)` reads only the type's own keys (`type`, `inputs` and `buffer` are read by the loader) and
/// records a diagnostic for every bad value instead of stopping; the loader rejects the file if any were recorded.
public protocol ComponentConfig: Sendable {
    /// The word users write after `type:`, such as `stdin`.
    static var typeName: String { get }
    /// One line for `sluice list` and the README.
    static var summary: String { get }
    /// Reads the options from `options`, recording diagnostics for what is wrong.
    init(reading options: ConfigMapping)
}

/// The configuration of a source type.
public protocol SourceConfig: ComponentConfig {
    /// Creates the running source.
    func makeSource() -> any Source
}

/// The configuration of a transform type.
public protocol TransformConfig: ComponentConfig {
    /// Creates the running transform; each pipeline run gets its own.
    func makeTransform(_ context: TransformContext) -> any Transform
}

/// What a running transform is given.
public struct TransformContext: Sendable {
    /// The transform's id, for messages.
    public let id: String
    /// Where its warnings go (evaluation errors, rate-limited).
    public let log: Logger

    public init(id: String, log: Logger) {
        self.id = id
        self.log = log
    }
}

/// The configuration of a sink type.
public protocol SinkConfig: ComponentConfig {
    /// Creates the running sink.
    func makeSink() -> any Sink
}

/// A running source: it reads from the outside world and sends batches until its input ends or it is stopped.
public protocol Source: Sendable {
    /// Produces events through `context.output` until the input ends or `context.stop` fires; throwing ends the
    /// pipeline with a runtime failure.
    func run(_ context: SourceContext) async throws
}

/// A running transform: a synchronous function of one batch, so that a stage never pays a hop per event.
public protocol Transform: Sendable {
    /// Rewrites `events` in place; every event removed must be counted in `discards` with its cause.
    mutating func process(_ events: inout [Event], discards: inout DiscardCounts)
}

/// A running sink: it takes batches from its input buffer and writes them out.
public protocol Sink: Sendable {
    /// Consumes `input` until it ends; counts every event written as sent, every other one as discarded.
    func run(_ input: EventBuffer, _ context: SinkContext) async throws
}
