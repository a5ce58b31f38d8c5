public import SluiceCore

/// Every sink type; adding a sink is one folder and one line here.
public enum SinkCatalog {
    /// The registered sink types; `standardOutput` is the writer the `stdout` sink writes to (metrics written to
    /// stdout share it), and no other sink is given it.
    public static func all(standardOutput: OutputWriter) -> [ComponentType] {
        [
            .sink(StdoutSinkConfig.self) { StdoutSink(format: $0.format, writer: standardOutput) },
            .sink(FileSinkConfig.self),
            .sink(BlackholeSinkConfig.self),
            .sink(WebSocketServerSinkConfig.self),
            .sink(KafkaSinkConfig.self),
        ]
    }
}
