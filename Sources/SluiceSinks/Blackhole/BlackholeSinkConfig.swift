public import SluiceCore

/// Options of the `blackhole` sink; it has none.
public struct BlackholeSinkConfig: SinkConfig {
    public static let typeName = "blackhole"
    public static let summary = "Counts and discards events; for benchmarks and for measuring the rest of a pipeline."

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        try options.validated()
    }

    public func makeSink() -> any Sink { BlackholeSink() }
}
