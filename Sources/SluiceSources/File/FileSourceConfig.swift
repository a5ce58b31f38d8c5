public import SluiceCore

/// Options of the `file` source.
///
/// ```yaml
/// app:
///   type: file
///   include: [/var/log/app/*.log]
///   exclude: ["*.gz"]
///   read_from: beginning
///   data_dir: /var/lib/sluice
/// ```
public struct FileSourceConfig: SourceConfig {
    public static let typeName = "file"
    public static let summary = "Follows text files matched by globs across rotation; checkpoints resume a restart."

    /// Where a file seen for the first time, with no checkpoint, is read from.
    public enum ReadFrom: String, ConfigChoice {
        case beginning
        case end
    }

    /// Glob patterns (glob(3)) of the files to follow; they are matched again every `globIntervalMillis`.
    public var include: [String] = []
    /// Patterns (fnmatch(3)) of paths to leave alone; a pattern without `/` is matched against the file name.
    public var exclude: [String] = []
    public var readFrom = ReadFrom.beginning
    /// The directory of the checkpoint file; `nil` keeps no checkpoints (a restart starts by `readFrom`).
    public var dataDirectory: String?
    public var decoding = EventDecoding.text
    public var maxLineBytes = 1 << 20
    public var multiline: MultilineConfig?
    public var globIntervalMillis = 1_000
    /// A field given the path of the file each event came from (as Vector's `file`); none when `nil`.
    public var pathField: EventPath?

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        if let node = options.required("include", note: "for example include: [/var/log/app/*.log]") {
            let patterns = node.stringList() ?? []
            for (pattern, mark) in patterns where !pattern.hasPrefix("/") {
                options.log.error(
                    "'include' patterns must be absolute paths, found '\(pattern)'", at: mark,
                    notes: ["a relative path would depend on the directory Sluice was started in"])
            }
            include = patterns.map(\.0)
            if patterns.isEmpty { options.log.error("'include' needs at least one pattern", at: node.mark) }
        }
        if let node = options.value("exclude") { exclude = node.stringList()?.map(\.0) ?? [] }
        if let value = options.value("read_from")?.choice(ReadFrom.self) { readFrom = value }
        if let node = options.value("data_dir") { dataDirectory = node.string() }
        if let value = options.value("decoding")?.choice(EventDecoding.self) { decoding = value }
        if let limit = options.value("max_line_bytes")?.int(in: 1...(1 << 30)) { maxLineBytes = limit }
        if let value = options.value("glob_interval_ms")?.int(in: 10...3_600_000) { globIntervalMillis = value }
        if let node = options.value("path_field"), let text = node.string() {
            pathField = EventPath(text)
            if pathField == nil {
                options.log.error(
                    "invalid field path '\(text)' for 'path_field'", at: node.mark,
                    notes: ["write a field name such as file"])
            }
        }
        multiline = MultilineConfig.read(options, decoding: decoding)
        try options.validated()
    }

    public func makeSource() -> any Source { FileSource(config: self) }
}
