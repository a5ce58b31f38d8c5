public import SluiceCore

/// The `host` source: events the Swift program running the pipeline feeds in, from an `AsyncSequence`
/// (``PipelineInput``). It exists only in the library's catalog; the `sluice` command has no host to feed it.
///
/// ```yaml
/// sources:
///   readings: {type: host}
/// ```
public struct HostInputSourceConfig: ComponentConfig {
    /// The word after `type:`: `host`.
    public static let typeName = "host"
    /// One line for catalogs.
    public static let summary = "Events a Swift program feeds in from an AsyncSequence (library only)."

    /// Reads the options: a host source has none.
    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        try options.validated()
    }
}
