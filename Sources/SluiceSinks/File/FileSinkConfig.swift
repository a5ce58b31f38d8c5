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
    public let path: String
    /// Append to or truncate an existing file.
    public let mode: Mode
    /// How each event becomes a line.
    public let format: LineFormat

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        let path = options.required("path", note: "the file to write, for example 'path: out.jsonl'")?.string()
        if path?.isEmpty == true {
            options.log.error("'path' must not be empty", at: options.value("path")?.mark)
        }
        let mode = options.value("mode")?.choice(Mode.self)
        let format = try? LineFormat(reading: options)
        self.path = try options.validated(path)
        self.mode = mode ?? .append
        self.format = try options.validated(format)
    }

    public func makeSink() -> any Sink { FileSink(config: self) }
}
