public import SluiceCore

/// Options of the `file` sink.
public struct FileSinkConfig: SinkConfig {
    public static let typeName = "file"
    public static let summary = "Writes each event to a file as a line of JSON or text, appending or truncating."

    /// What happens to an existing file.
    public enum Mode: String, ConfigChoice {
        case append
        case truncate
    }

    /// The file written.
    public var path = ""
    /// Append to or truncate an existing file.
    public var mode = Mode.append
    /// How each event becomes a line.
    public var format: LineFormat

    public init(reading options: ConfigMapping) {
        if let path = options.required("path", note: "the file to write, for example 'path: out.jsonl'")?.string() {
            if path.isEmpty {
                options.log.error("'path' must not be empty", at: options.value("path")?.mark)
            }
            self.path = path
        }
        if let mode = options.value("mode")?.choice(Mode.self) { self.mode = mode }
        format = LineFormat(reading: options)
    }

    public func makeSink() -> any Sink { FileSink(config: self) }
}

/// Writes events to a file it opens at start and closes at the end.
struct FileSink: Sink {
    let config: FileSinkConfig

    func run(_ input: EventBuffer, _ context: SinkContext) async throws {
        let writer = try OutputWriter.open(path: config.path, append: config.mode == .append)
        defer { writer.close() }
        try await LineWriting(format: config.format, writer: writer).run(input, context)
    }
}
