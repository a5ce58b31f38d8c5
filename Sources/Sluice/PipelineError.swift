public import SluiceCore

/// Why a pipeline could not be made or started: every problem found in its definition (each with its line and
/// column), or a mistake in how it was run.
public struct PipelineError: Error, Sendable, CustomStringConvertible {
    /// The problems, errors and warnings, in the order found; empty for a mistake in running it.
    public let diagnostics: [Diagnostic]
    /// One line per problem.
    public let description: String

    init(diagnostics: [Diagnostic], source: String) {
        self.diagnostics = diagnostics
        let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
        description = diagnostics.filter { $0.severity == .error }
            .map { $0.rendered(path: "pipeline", sourceLines: lines) }.joined(separator: "\n")
    }

    init(message: String) {
        diagnostics = []
        description = message
    }
}
