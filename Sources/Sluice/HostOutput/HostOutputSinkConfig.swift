public import SluiceCore

/// The `host` sink: events the Swift program running the pipeline reads out as an `AsyncSequence`
/// (``PipelineOutput``), through the sink's input buffer with its policy (`block` by default: a host that reads
/// slowly slows the pipeline down; `drop_oldest` keeps it current). It exists only in the library's catalog.
///
/// ```yaml
/// sinks:
///   alerts: {type: host, inputs: [hot], buffer: {max_events: 1000, when_full: drop_oldest}}
/// ```
public struct HostOutputSinkConfig: ComponentConfig {
    /// The word after `type:`: `host`.
    public static let typeName = "host"
    /// One line for catalogs.
    public static let summary = "Events a Swift program reads out as an AsyncSequence (library only)."

    /// Reads the options: a host sink has none but its `buffer`, which the loader reads.
    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        try options.validated()
    }
}
