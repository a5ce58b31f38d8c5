public import SluiceCore

/// Every sink type; adding a sink is one folder and one line here.
public enum SinkCatalog {
    /// The registered sink types.
    public static let all: [any SinkConfig.Type] = [
        StdoutSinkConfig.self,
        FileSinkConfig.self,
        BlackholeSinkConfig.self,
        WebSocketServerSinkConfig.self,
    ]
}
