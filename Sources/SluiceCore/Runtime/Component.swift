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
/// `init(reading:)` reads only the type's own keys (`type`, `inputs` and `buffer` are read by the loader). It records
/// a diagnostic for every bad value and goes on reading, so that every mistake is reported at once, and then throws
/// ``InvalidConfig`` (``ConfigMapping/validated()``): a config value is complete and valid, or it is not made.
public protocol ComponentConfig: Sendable {
    /// The word users write after `type:`, such as `stdin`.
    static var typeName: String { get }
    /// One line for `sluice list` and the README.
    static var summary: String { get }
    /// Reads the options from `options`, recording diagnostics for what is wrong and throwing if there was any.
    init(reading options: ConfigMapping) throws(InvalidConfig)
}

/// The configuration of a source type that needs nothing but its options to run.
public protocol SourceConfig: ComponentConfig {
    /// Creates the running source.
    func makeSource() -> any Source
}

/// The configuration of a transform type.
public protocol TransformConfig: ComponentConfig {
    /// Creates the running transform; each pipeline run gets its own.
    func makeTransform(_ context: TransformContext) -> any Transform
}

/// The configuration of a sink type that needs nothing but its options to run.
public protocol SinkConfig: ComponentConfig {
    /// Creates the running sink.
    func makeSink() -> any Sink
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

/// A running source: it reads from the outside world and sends batches until its input ends or it is stopped.
public protocol Source: Sendable {
    /// Produces events through `context.output` until the input ends, `context.stop` fires or its task is
    /// cancelled; throwing ends the pipeline with a runtime failure.
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
