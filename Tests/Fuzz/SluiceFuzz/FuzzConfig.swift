internal import SluiceCLI
internal import SluiceCore

/// A value only the environment holds: no diagnostic may repeat it unless the file itself contains it.
private let secret = "fuzz-env-secret-7f3a"

/// Fuzz target for the pipeline file reader (libyaml, the config tree, every component's settings).
///
/// Any text must load without trapping; a file without a pipeline must come with at least one error, every
/// error must carry a message, and a value from `${SECRET}` must never appear in a message.
func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let loader = PipelineLoader(
        catalog: SluiceCommand.catalog(standardOutput: SluiceCommand.standardOutput), environment: ["SECRET": secret])
    let result = loader.load(text)
    let errors = result.diagnostics.filter { $0.severity == .error }
    precondition(result.definition != nil || !errors.isEmpty, "no pipeline and no error for: \(text)")
    precondition(result.definition == nil || errors.isEmpty, "a pipeline despite errors for: \(text)")
    if !text.contains(secret) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        for diagnostic in result.diagnostics {
            let rendered = diagnostic.rendered(path: "fuzz.yaml", sourceLines: lines)
            precondition(!rendered.contains(secret), "a secret in a message: \(rendered)")
        }
    }
    return 0
}
