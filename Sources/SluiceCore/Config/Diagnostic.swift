public import SluiceYAML

/// One problem found in a pipeline file: a message at a position, with notes on what was expected.
public struct Diagnostic: Sendable, Equatable {
    /// How serious a diagnostic is: errors make a file invalid, warnings do not.
    public enum Severity: String, Sendable {
        case error
        case warning
    }

    /// Whether the file is invalid because of this.
    public let severity: Severity
    /// What is wrong, in one sentence without a trailing period.
    public let message: String
    /// Where it is; `nil` for problems of the file as a whole.
    public let mark: YAMLMark?
    /// What was expected, each printed on its own `note:` line.
    public let notes: [String]

    public init(_ severity: Severity, _ message: String, at mark: YAMLMark?, notes: [String] = []) {
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
    /// Everything recorded so far, in the order found.
    public private(set) var diagnostics: [Diagnostic] = []

    public init() {}

    /// True when at least one error was recorded.
    public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }

    /// Records an error.
    public func error(_ message: String, at mark: YAMLMark?, notes: [String] = []) {
        diagnostics.append(Diagnostic(.error, message, at: mark, notes: notes))
    }

    /// Records a warning.
    public func warning(_ message: String, at mark: YAMLMark?, notes: [String] = []) {
        diagnostics.append(Diagnostic(.warning, message, at: mark, notes: notes))
    }
}
