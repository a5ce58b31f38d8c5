public import SluiceCore
internal import SluiceSync
internal import Synchronization

/// Component doubles for tests of the core: a counting source, a list source, a pass-through transform and a
/// collecting sink, registered in a catalog of their own.
public enum TestCatalog {
    /// The catalog of test doubles.
    public static let types: [ComponentType] = [
        .source(CounterSourceConfig.self), .source(ListSourceConfig.self), .transform(PassTransformConfig.self),
        .sink(CollectSinkConfig.self),
    ]

    /// A catalog of the test doubles alone.
    public static let catalog = ComponentCatalog(types)
}

/// `counter`: emits the integers `0..<count` in batches of 100, then ends. With `record_finished: NAME` it keeps,
/// in ``FinishedRecords`` under NAME, each batch's ingest time and what ``SourceContext/finishedBefore`` said once
/// the pipeline had drained, as a source that commits positions would use it.
public struct CounterSourceConfig: SourceConfig, RunsFollowingStatelessTransforms {
    public static let typeName = "counter"
    public static let summary = "Test double: the integers 0..<count."
    public var count = 10
    public var recordFinished: String?
    /// With `runs_stateless_transforms: true`, the stateless transforms after it run in its sending.
    public var runsFollowingStatelessTransforms = false

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        if let count = options.value("count")?.int(in: 0...1_000_000_000) { self.count = count }
        recordFinished = options.value("record_finished")?.string()
        if let runs = options.value("runs_stateless_transforms")?.bool() { runsFollowingStatelessTransforms = runs }
        try options.validated()
    }

    public func makeSource() -> any Source { CounterSource(count: count, recordFinished: recordFinished) }
}

struct CounterSource: Source {
    let count: Int
    let recordFinished: String?
    private let finishedBefore = Locked<(@Sendable () -> UInt64)?>(nil)

    init(count: Int, recordFinished: String?) {
        self.count = count
        self.recordFinished = recordFinished
    }

    func run(_ context: SourceContext) async throws {
        finishedBefore.locked { $0 = context.finishedBefore }
        var next = 0
        var ingestTimes: [UInt64] = []
        while next < count, !context.stop.isStopped {
            let end = min(count, next + 100)
            let now = MonotonicClock.nanos()
            let batch = (next..<end).map { Event(.int(Int64($0)), ingestNanos: now) }
            context.metrics.recordReceived(batch.count)
            await context.output.send(batch)
            ingestTimes.append(now)
            next = end
        }
        if let recordFinished { FinishedRecords.store.locked { $0[recordFinished] = (ingestTimes, 0) } }
    }

    func pipelineEnded() async {
        guard let recordFinished, let finishedBefore = finishedBefore.locked({ $0 }) else { return }
        let floor = finishedBefore()
        FinishedRecords.store.locked { $0[recordFinished]?.finishedBefore = floor }
    }
}

/// What `counter` sources with `record_finished` saw: each batch's ingest time, and the finished floor after the
/// drain.
public enum FinishedRecords {
    static let store = Locked<[String: (batchIngestNanos: [UInt64], finishedBefore: UInt64)]>([:])

    /// Removes and returns the record kept under `name`.
    public static func take(_ name: String) -> (batchIngestNanos: [UInt64], finishedBefore: UInt64)? {
        store.locked { $0.removeValue(forKey: name) }
    }
}

/// `list`: emits the JSON values given in `values` (JSON text each), then ends.
public struct ListSourceConfig: SourceConfig {
    public static let typeName = "list"
    public static let summary = "Test double: the given JSON values."
    public var values: [JSONValue] = []

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        for (text, location) in options.value("values")?.stringList() ?? [] {
            do {
                values.append(try JSONReader.parse(text))
            } catch {
                options.log.error("not a JSON value: \(error)", at: location)
            }
        }
        try options.validated()
    }

    public func makeSource() -> any Source { ListSource(values: values) }
}

struct ListSource: Source {
    let values: [JSONValue]

    func run(_ context: SourceContext) async throws {
        context.metrics.recordReceived(values.count)
        await context.output.send(values.map { Event($0, ingestNanos: MonotonicClock.nanos()) })
    }
}

/// `pass`: passes every event on; with `drop_every: N`, discards every Nth event under `filtered`. With
/// `stateless: true` it is a stateless transform (``TransformConfig/isStateless``) and discards instead the events
/// whose value (a counter's number) is a multiple of N.
public struct PassTransformConfig: TransformConfig {
    public static let typeName = "pass"
    public static let summary = "Test double: passes events on."
    public var dropEvery = 0
    public var isStateless = false
    /// `max_events_per_pass: N`: asks the runner for batches of at most N (``Transform/maxEventsPerPass``), and
    /// with `passes_into: NAME` keeps the size of every batch it is given in ``CollectedEvents`` under NAME.
    public var maxEventsPerPass: Int?
    public var passesInto: String?

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        if let every = options.value("drop_every")?.int(in: 0...1_000_000) { dropEvery = every }
        if let stateless = options.value("stateless")?.bool() { isStateless = stateless }
        maxEventsPerPass = options.value("max_events_per_pass")?.int(in: 1...1_000_000)
        passesInto = options.value("passes_into")?.string()
        try options.validated()
    }

    public func makeTransform(_ context: TransformContext) -> any Transform {
        PassTransform(
            dropEvery: dropEvery, byValue: isStateless, maxEventsPerPass: maxEventsPerPass, passesInto: passesInto)
    }
}

struct PassTransform: Transform {
    let dropEvery: Int
    let byValue: Bool
    let maxEventsPerPass: Int?
    let passesInto: String?
    var seen = 0

    mutating func process(_ events: inout [Event], _ pass: inout TransformPass) {
        if let passesInto { CollectedEvents.append([Event(.int(Int64(events.count)))], to: passesInto) }
        guard dropEvery > 0 else { return }
        events.retainEvents { event in
            seen += 1
            let number = byValue ? Int(event.value.intValue ?? 0) : seen
            guard number % dropEvery == 0 else { return true }
            pass.discards[.filtered] += 1
            return false
        }
    }
}

/// `collect`: keeps every event in ``CollectedEvents`` under the name given by `into` (default: the sink's id).
/// With `fail_after: N` it fails (a write error) at the batch that would take it past N events.
public struct CollectSinkConfig: SinkConfig {
    public static let typeName = "collect"
    public static let summary = "Test double: keeps events for inspection."
    public var name: String?
    public var failAfter: Int?

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        name = options.value("into")?.string()
        failAfter = options.value("fail_after")?.int(in: 0...1_000_000_000)
        try options.validated()
    }

    public func makeSink() -> any Sink { CollectSink(name: name, failAfter: failAfter) }
}

struct CollectSink: Sink {
    let name: String?
    let failAfter: Int?

    struct WriteFailed: Error {}

    func run(_ input: EventBuffer, _ context: SinkContext) async throws {
        var written = 0
        while let batch = await input.next() {
            written += batch.count
            if let failAfter, written > failAfter { throw WriteFailed() }
            CollectedEvents.append(batch, to: name ?? context.id)
            context.metrics.recordWritten(batch, at: MonotonicClock.nanos())
        }
    }
}

/// Where `collect` sinks keep their events; tests use distinct names so they can run in parallel.
public enum CollectedEvents {
    private static let store = Mutex<[String: [Event]]>([:])

    static func append(_ events: [Event], to name: String) {
        store.locked { $0[name, default: []] += events }
    }

    /// Removes and returns everything collected under `name`.
    public static func take(_ name: String) -> [Event] {
        store.locked { $0.removeValue(forKey: name) ?? [] }
    }
}
