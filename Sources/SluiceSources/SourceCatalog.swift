public import SluiceCore

/// Every source type; adding a source is one folder and one line here.
public enum SourceCatalog {
    /// The registered source types; `standardInput` is the descriptor the `stdin` source reads, and no other source
    /// is given it.
    public static func all(standardInput: Int32) -> [ComponentType] {
        [
            .source(StdinSourceConfig.self) { StdinSource(config: $0, descriptor: standardInput) },
            .source(SimulatorSourceConfig.self),
            .source(WebSocketSourceConfig.self),
            .source(WebSocketServerSourceConfig.self),
            .source(FileSourceConfig.self),
            .source(KafkaSourceConfig.self),
        ]
    }
}
