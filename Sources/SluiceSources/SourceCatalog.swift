public import SluiceCore

/// Every source type; adding a source is one folder and one line here.
public enum SourceCatalog {
    /// The registered source types.
    public static let all: [any SourceConfig.Type] = [
        StdinSourceConfig.self,
        SimulatorSourceConfig.self,
        WebSocketSourceConfig.self,
        WebSocketServerSourceConfig.self,
    ]
}
