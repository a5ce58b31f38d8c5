public import SluiceCore

/// Options of the `blackhole` sink; it has none.
public struct BlackholeSinkConfig: SinkConfig {
    public static let typeName = "blackhole"
    public static let summary = "Counts and discards events; for benchmarks and for measuring the rest of a pipeline."

    public init(reading options: ConfigMapping) {}

    public func makeSink() -> any Sink { BlackholeSink() }
}

/// Takes every batch and counts it as written, with its latency.
struct BlackholeSink: Sink {
    func run(_ input: EventBuffer, _ context: SinkContext) async throws {
        while let batch = await input.next() {
            context.metrics.recordWritten(batch, at: MonotonicClock.nanos())
        }
    }
}
