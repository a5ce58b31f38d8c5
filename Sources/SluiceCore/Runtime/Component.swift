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

/// The options of a source type whose running source runs the stateless transforms that follow it
/// (``TransformConfig/isStateless``) on the threads that make its batches, taking them from its output
/// (`EventOutput.chain`): they then run there rather than in a task of their own. A source without it keeps them
/// in tasks of their own (where its own work fills both cores, running them on its thread would slow both down).
public protocol RunsFollowingStatelessTransforms: ComponentConfig {
    /// True when these options have the source run them (always, for a source that always can).
    var runsFollowingStatelessTransforms: Bool { get }
}

/// The configuration of a transform type.
public protocol TransformConfig: ComponentConfig {
    /// The names of the transform's outputs, which consumers read as `<id>.<name>`; empty (the default) for a
    /// transform with one output, read as `<id>`.
    var outputs: [String] { get }
    /// Creates the running transform; each pipeline run gets its own.
    func makeTransform(_ context: TransformContext) -> any Transform
    /// True when the transform keeps nothing from one event to the next that changes what it does (no window, key,
    /// count or deadline), and has one output: such a transform may run as several instances at once, on the
    /// threads that make a source's batches (`PipelineRunner`).
    var isStateless: Bool { get }
}

extension TransformConfig {
    /// One unnamed output.
    public var outputs: [String] { [] }
    /// Stateful, unless the type says otherwise.
    public var isStateless: Bool { false }
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
    /// For a transform with named outputs: those some component reads (an output nobody reads may discard).
    public let readOutputs: Set<String>

    /// The context of transform `id`, logging to `log`; `readOutputs` are its named outputs that some component reads.
    public init(id: String, log: Logger, readOutputs: Set<String> = []) {
        self.id = id
        self.log = log
        self.readOutputs = readOutputs
    }
}

/// A running source: it reads from the outside world and sends batches until its input ends or it is stopped.
public protocol Source: Sendable {
    /// Produces events through `context.output` until the input ends, `context.stop` fires or its task is
    /// cancelled; throwing ends the pipeline with a runtime failure.
    func run(_ context: SourceContext) async throws
    /// Runs once the whole pipeline has drained, after ``run(_:)``: a source that keeps positions commits them now,
    /// as far as ``SourceContext/finishedBefore`` allows (everything sent, unless a component failed or a sink
    /// could not deliver some of it).
    func pipelineEnded() async
}

extension Source {
    /// Nothing to do: a source without positions has nothing to commit.
    public func pipelineEnded() async {}
}

/// A running transform: a synchronous function of one batch, so that a stage never pays a hop per event.
///
/// A stateful transform also acts when no event arrives: it names a ``deadline`` (a window's end on the wall clock,
/// an idle timeout), and the runner calls ``advance(_:_:)`` once it has passed, from the task that runs the
/// transform, without a task or timer per event. When the input ends, ``finish(_:_:stopping:)`` lets it emit what
/// it holds before the pipeline drains.
public protocol Transform: Sendable {
    /// Rewrites `events` in place; every event removed is counted in `pass` (discarded by cause, or folded), and
    /// every event added is counted as created.
    mutating func process(_ events: inout [Event], _ pass: inout TransformPass)
    /// The wall-clock time, in milliseconds since the Unix epoch, at which ``advance(_:_:)`` should run if no event
    /// comes first; `nil` when nothing is due.
    var deadline: Int64? { get }
    /// Runs once ``deadline`` has passed: appends to the empty `events` whatever the passage of time releases.
    mutating func advance(_ events: inout [Event], _ pass: inout TransformPass)
    /// Runs once, when the input has ended: appends to the empty `events` everything held. `stopping` is true when
    /// the pipeline was asked to stop, so what is emitted may be incomplete.
    mutating func finish(_ events: inout [Event], _ pass: inout TransformPass, stopping: Bool)
    /// What the transform holds, for metrics; `nil` for a stateless one.
    var state: TransformState? { get }
    /// The earliest ingest time among the events folded into what it holds (and not yet emitted), or
    /// `UInt64.max`; it may be earlier than the truth, never later. An event it creates from them carries an
    /// ingest time no later than theirs, so that they stay held until it is finished.
    var oldestHeldIngestNanos: UInt64 { get }
    /// The most input events one ``process(_:_:)`` should be given, for a transform that may emit many events for
    /// one input event (a hopping window aggregate: each event can open `size / hop` windows, and each window
    /// opened past the group limit emits one early); `nil` for no limit. The runner hands a larger batch over in
    /// parts of this size, sending on what each part made before the next, so that what one pass emits stays
    /// within the transform's bounds instead of growing with the batch. Stateless transforms that run in a source's
    /// sending (``TransformConfig/isStateless``) are given whole batches: none of Sluice's asks for parts.
    var maxEventsPerPass: Int? { get }
}

extension Transform {
    /// No deadline: a stateless transform never needs the clock.
    public var deadline: Int64? { nil }
    /// Releases nothing: a stateless transform holds nothing.
    public mutating func advance(_ events: inout [Event], _ pass: inout TransformPass) {}
    /// Emits nothing: a stateless transform holds nothing.
    public mutating func finish(_ events: inout [Event], _ pass: inout TransformPass, stopping: Bool) {}
    /// No state.
    public var state: TransformState? { nil }
    /// Nothing held.
    public var oldestHeldIngestNanos: UInt64 { .max }
    /// At most one event out for one in: any batch at once.
    public var maxEventsPerPass: Int? { nil }
}

/// A running sink: it takes batches from its input buffer and writes them out.
public protocol Sink: Sendable {
    /// Consumes `input` until it ends; counts every event written as sent, every other one as discarded.
    func run(_ input: EventBuffer, _ context: SinkContext) async throws
}
