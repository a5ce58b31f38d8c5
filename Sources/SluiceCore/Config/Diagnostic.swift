/// One problem found in a pipeline file: a message at a position, with notes on what was expected.
public struct Diagnostic: Sendable, Equatable {
    /// How serious a diagnostic is: errors make a file invalid, warnings do not.
    public enum Severity: String, Sendable {
        /// The file is invalid.
        case error
        /// Worth knowing; the file is still valid.
        case warning
    }

    /// Whether the file is invalid because of this.
    public let severity: Severity
    /// What is wrong, in one sentence without a trailing period.
    public let message: String
    /// Where it is; `nil` for problems of the file as a whole.
    public let mark: FilePosition?
    /// What was expected, each printed on its own `note:` line.
    public let notes: [String]

    /// A problem of `severity` with `message` at `mark` (`nil` for the file as a whole), and `notes` on what was expected.
    public init(_ severity: Severity, _ message: String, at mark: FilePosition?, notes: [String] = []) {
        self.severity = severity
        self.message = message
        self.mark = mark
        self.notes = notes
    }

    /// Renders the diagnostic like a compiler: `path:line:column: error: message`, the source line, a caret under
    /// the column, then the notes.
    public func rendered(path: String, sourceLines: [Substring]) -> String {
        guard let mark else {
            return (["\(path): \(severity.rawValue): \(message)"] + notes.map { "note: \($0)" })
                .joined(separator: "\n")
        }
        var lines = ["\(path):\(mark.line):\(mark.column): \(severity.rawValue): \(message)"]
        if mark.line >= 1, mark.line <= sourceLines.count {
            let source = sourceLines[mark.line - 1]
            lines.append(String(source))
            // Tabs stay tabs so the caret lines up in any terminal.
            let prefix = source.prefix(max(0, mark.column - 1)).map { $0 == "\t" ? "\t" : " " }.joined()
            lines.append(prefix + "^")
        }
        lines += notes.map { "note: \($0)" }
        return lines.joined(separator: "\n")
    }
}

/// Collects diagnostics while a pipeline file is read, so that every problem is reported, not just the first.
public final class DiagnosticLog {
    private var recorded: [Diagnostic] = []
    /// Values that `${...}` put into the file. They may be secrets: whatever message would repeat one shows a
    /// placeholder instead (messages about such values also avoid quoting them in the first place).
    private var environmentValues: Set<String> = []

    /// Everything recorded so far, in the order found, with values from the environment blanked out.
    public var diagnostics: [Diagnostic] {
        guard !environmentValues.isEmpty else { return recorded }
        // Longest first, so that a value containing another is blanked whole.
        let secrets = environmentValues.sorted { $0.count > $1.count }
        func redact(_ text: String) -> String {
            secrets.reduce(text) { $0.replacing($1, with: "[value from the environment]") }
        }
        return recorded.map { Diagnostic($0.severity, redact($0.message), at: $0.mark, notes: $0.notes.map(redact)) }
    }

    /// An empty log.
    public init() {}

    /// Remembers a value substituted from the environment, so that no message repeats it. Values shorter than
    /// four characters are not blanked: they would garble messages and hide little.
    func noteEnvironmentValue(_ value: String) {
        if value.count >= 4 { environmentValues.insert(value) }
    }

    /// True when at least one error was recorded.
    public var hasErrors: Bool { errorCount > 0 }

    /// How many errors were recorded.
    public private(set) var errorCount = 0

    /// Records an error.
    public func error(_ message: String, at mark: FilePosition?, notes: [String] = []) {
        recorded.append(Diagnostic(.error, message, at: mark, notes: notes))
        errorCount += 1
    }

    /// Records a warning.
    public func warning(_ message: String, at mark: FilePosition?, notes: [String] = []) {
        recorded.append(Diagnostic(.warning, message, at: mark, notes: notes))
    }
}
