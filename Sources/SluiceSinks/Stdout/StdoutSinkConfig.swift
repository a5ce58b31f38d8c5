public import SluiceCore

/// Options of the `stdout` sink.
public struct StdoutSinkConfig: SinkConfig {
    public static let typeName = "stdout"
    public static let summary = "Writes each event to standard output as a line of JSON or text."

    /// How each event becomes a line.
    public var format: LineFormat

    public init(reading options: ConfigMapping) {
        format = LineFormat(reading: options)
    }

    public func makeSink() -> any Sink { StdoutSink(format: format) }
}

/// Writes events to standard output through the process's shared stdout writer.
struct StdoutSink: Sink {
    let format: LineFormat

    func run(_ input: EventBuffer, _ context: SinkContext) async throws {
        try await LineWriting(format: format, writer: context.standardOutput).run(input, context)
    }
}
