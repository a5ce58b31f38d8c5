internal import SluiceCore

/// Writes events to a file it opens at start and closes at the end.
struct FileSink: Sink {
    let config: FileSinkConfig

    func run(_ input: EventBuffer, _ context: SinkContext) async throws {
        let writer = try await OutputWriter.open(path: config.path, append: config.mode == .append)
        do {
            try await LineWriting(format: config.format, writer: writer).run(input, context)
        } catch {
            await writer.close()
            throw error
        }
        await writer.close()
    }
}
