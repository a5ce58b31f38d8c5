public import SluiceCore

/// Options of the `stdout` sink.
public struct StdoutSinkConfig: ComponentConfig {
    public static let typeName = "stdout"
    public static let summary = "Writes each event to standard output as a line of JSON or text."

    /// How each event becomes a line.
    public let format: LineFormat

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        format = try LineFormat(reading: options)
    }
}
