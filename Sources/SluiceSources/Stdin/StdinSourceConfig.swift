public import SluiceCore

/// Options of the `stdin` source.
public struct StdinSourceConfig: ComponentConfig, RunsFollowingStatelessTransforms {
    public static let typeName = "stdin"
    public static let summary = "Events from standard input: one JSON value, or one text line, per line."
    /// Each half of a read runs them on the thread that decoded it.
    public var runsFollowingStatelessTransforms: Bool { true }

    /// How each line becomes an event.
    public var decoding = EventDecoding.json
    /// Lines longer than this are skipped whole and counted under `oversize`.
    public var maxLineBytes = 1 << 20
    /// With text decoding: how lines join into multi-line events.
    public var multiline: MultilineConfig?

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        if let decoding = options.value("decoding")?.choice(EventDecoding.self) { self.decoding = decoding }
        if let limit = options.value("max_line_bytes")?.int(in: 1...(1 << 30)) { maxLineBytes = limit }
        multiline = MultilineConfig.read(options, decoding: decoding)
        try options.validated()
    }
}
