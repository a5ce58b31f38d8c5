public import SluiceCore

/// Options of the `stdout` sink.
public struct StdoutSinkConfig: SinkConfig {
    public static let typeName = "stdout"
    public static let summary = "Writes each event to standard output as a line of JSON or text."

    /// How each event becomes a line.
    public var encoding = LineEncoding.json

    public init(reading options: ConfigMapping) {
        if let encoding = options.value("encoding")?.choice(LineEncoding.self) { self.encoding = encoding }
    }

    public func makeSink() -> any Sink { StdoutSink(encoding: encoding) }
}

/// Writes events to standard output through the process's shared stdout writer.
struct StdoutSink: Sink {
    let encoding: LineEncoding

    func run(_ input: EventBuffer, _ context: SinkContext) async throws {
        try await LineWriting(encoding: encoding, writer: context.standardOutput).run(input, context.metrics)
    }
}
