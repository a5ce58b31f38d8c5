internal import SluiceCore
internal import SluiceRegex

/// The `multiline` option of text sources: lines that do not match `start_pattern` continue the event begun by the
/// last line that did, so that a stack trace is one event.
///
/// ```yaml
/// multiline: {start_pattern: '^\d{4}-\d{2}-\d{2}', max_lines: 500, max_bytes: 1048576, timeout_ms: 1000}
/// ```
public struct MultilineConfig: Sendable {
    /// A line matching it begins an event (PCRE2).
    let startPattern: RegexPattern
    /// An event is cut (emitted, and the cut counted) before it would exceed either.
    let maxLines: Int
    let maxBytes: Int
    /// An event still open this long after its last line is emitted, so a live tail is not held back.
    let timeoutMillis: Int

    /// Reads a source's `multiline` option, which needs text decoding; `nil` when absent or after recording errors.
    static func read(_ options: ConfigMapping, decoding: EventDecoding) -> MultilineConfig? {
        guard let node = options.value("multiline") else { return nil }
        if decoding != .text {
            options.log.error(
                "multiline joins text lines; it needs 'decoding: text'", at: node.mark,
                notes: ["JSON input has one event per line already"])
        }
        return read(node)
    }

    /// Reads the `multiline` mapping; `nil` after recording errors.
    static func read(_ node: ConfigNode) -> MultilineConfig? {
        guard let options = node.mapping() else { return nil }
        let pattern = options.required("start_pattern", note: "for example start_pattern: '^\\d{4}-\\d{2}-\\d{2}'")
            .flatMap(regexPattern)
        let maxLines = options.value("max_lines")?.int(in: 2...1_000_000) ?? 500
        let maxBytes = options.value("max_bytes")?.int(in: 1_024...(1 << 30)) ?? 1 << 20
        let timeout = options.value("timeout_ms")?.int(in: 1...3_600_000) ?? 1_000
        options.finish()
        guard let pattern, (try? options.validated()) != nil else { return nil }
        return MultilineConfig(startPattern: pattern, maxLines: maxLines, maxBytes: maxBytes, timeoutMillis: timeout)
    }
}

/// A regular expression option, compiled now; a mistake is reported at its character in the YAML value.
func regexPattern(_ node: ConfigNode) -> RegexPattern? {
    guard let text = node.string() else { return nil }
    do {
        return try RegexPattern(text)
    } catch {
        let characters = String(decoding: text.utf8.prefix(error.byteOffset), as: UTF8.self).unicodeScalars.count
        node.log.error(
            "invalid regular expression in \(node.name): \(error.message)", at: node.mark(atOffset: characters),
            notes: ["patterns are PCRE2, as in grep -P"])
        return nil
    }
}
