internal import SluiceCore

/// Writes events to standard output through the process's stdout writer, which metrics written to stdout share.
struct StdoutSink: Sink {
    let format: LineFormat
    /// Standard output, given by the catalog, which alone knows the process.
    let writer: OutputWriter

    func run(_ input: EventBuffer, _ context: SinkContext) async throws {
        try await LineWriting(format: format, writer: writer).run(input, context)
    }
}
