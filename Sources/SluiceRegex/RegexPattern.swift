internal import CLibPCRE2

/// A regular expression in PCRE2's dialect (Perl-compatible: `(?i)`, `\b`, `\d`, lookaround, named groups
/// `(?<name>...)`), compiled once in UTF mode and JIT-compiled where the machine allows it. Matching needs a
/// ``RegexMatcher`` (its match data), one per task.
///
/// `\d`, `\w`, `\s` and `\b` are ASCII classes, as in grep and Vector; start the pattern with `(*UCP)` for Unicode
/// ones. A match that backtracks more than ``matchLimit`` times fails with ``RegexMatchError`` rather than running
/// for seconds on a hostile line.
public final class RegexPattern: @unchecked Sendable {
    // @unchecked: `code` and `context` are written only here in init and freed in deinit. PCRE2 lets threads share
    // a compiled pattern (its JIT code included) and a match context for matching, each with its own match data.
    private let code: OpaquePointer
    private let context: OpaquePointer
    private let isJITCompiled: Bool

    /// The pattern's text.
    public let source: String
    /// The number of capturing groups.
    public let groupCount: Int
    /// The named groups, in the order of their numbers.
    public let namedGroups: [(name: String, number: Int)]

    /// How many times one match may backtrack (PCRE2's match limit) before it fails.
    public static let matchLimit: UInt32 = 1_000_000

    /// Compiles `source`; a mistake throws with PCRE2's message and its offset in the pattern's bytes.
    public init(_ source: String) throws(RegexError) {
        var errorCode: Int32 = 0
        var errorOffset = 0
        let compiled =
            source.utf8.withContiguousStorageIfAvailable { bytes in
                pcre2_compile_8(bytes.baseAddress, bytes.count, PCRE2_UTF, &errorCode, &errorOffset, nil)
            }
            ?? Array(source.utf8).withUnsafeBufferPointer { bytes in
                pcre2_compile_8(bytes.baseAddress, bytes.count, PCRE2_UTF, &errorCode, &errorOffset, nil)
            }
        guard let compiled else { throw RegexError(message: Self.message(errorCode), byteOffset: errorOffset) }
        guard let context = pcre2_match_context_create_8(nil) else {
            pcre2_code_free_8(compiled)
            throw RegexError(message: "out of memory", byteOffset: 0)
        }
        pcre2_set_match_limit_8(context, Self.matchLimit)
        code = compiled
        self.context = context
        isJITCompiled = pcre2_jit_compile_8(compiled, PCRE2_JIT_COMPLETE) == 0
        self.source = source
        groupCount = Int(Self.info(compiled, PCRE2_INFO_CAPTURECOUNT))
        namedGroups = Self.names(compiled)
    }

    deinit {
        pcre2_match_context_free_8(context)
        pcre2_code_free_8(code)
    }

    /// Match data for this pattern, for one task.
    public func makeMatcher() -> RegexMatcher { RegexMatcher(self) }

    fileprivate func makeMatchData() -> OpaquePointer? { pcre2_match_data_create_from_pattern_8(code, nil) }

    /// Runs one match of valid UTF-8 `bytes` into `data`; the number of groups set, 0 for no match.
    fileprivate func match(_ bytes: UnsafeRawBufferPointer, _ data: OpaquePointer, checked: Bool = false)
        throws(RegexMatchError) -> Int
    {
        let options = checked ? 0 : PCRE2_NO_UTF_CHECK
        // PCRE2 wants an address even for an empty subject.
        var none: UInt8 = 0
        let result = withUnsafePointer(to: &none) { none in
            let subject = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? none
            // Swift strings and checked event text need no second UTF-8 check; raw input lines do.
            return isJITCompiled
                ? pcre2_jit_match_8(code, subject, bytes.count, 0, options, data, context)
                : pcre2_match_8(code, subject, bytes.count, 0, options, data, context)
        }
        if result > 0 { return Int(result) }
        if result == PCRE2_ERROR_NOMATCH { return 0 }
        // 0 means the match data had too few slots, which match data made from the pattern never has.
        throw RegexMatchError(message: result == 0 ? "too many groups" : Self.message(result))
    }

    private static func message(_ code: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let length = pcre2_get_error_message_8(code, &buffer, buffer.count)
        return length > 0 ? String(decoding: buffer[..<Int(length)], as: UTF8.self) : "error \(code)"
    }

    private static func info(_ code: OpaquePointer, _ what: Int32) -> UInt32 {
        var value: UInt32 = 0
        _ = pcre2_pattern_info_8(code, UInt32(what), &value)
        return value
    }

    /// The name table: each entry is the group number (two bytes, most significant first), then the name,
    /// zero-terminated, padded to the entry size.
    private static func names(_ code: OpaquePointer) -> [(name: String, number: Int)] {
        let count = Int(info(code, PCRE2_INFO_NAMECOUNT))
        let size = Int(info(code, PCRE2_INFO_NAMEENTRYSIZE))
        var table: UnsafePointer<UInt8>?
        guard count > 0, pcre2_pattern_info_8(code, UInt32(PCRE2_INFO_NAMETABLE), &table) == 0, let table else {
            return []
        }
        var names: [(name: String, number: Int)] = []
        for index in 0..<count {
            let entry = table + index * size
            let number = Int(entry[0]) << 8 | Int(entry[1])
            let name = UnsafeBufferPointer(start: entry + 2, count: size - 2).prefix { $0 != 0 }
            names.append((String(decoding: name, as: UTF8.self), number))
        }
        return names.sorted { $0.number < $1.number }
    }
}

/// The match data of one ``RegexPattern``: the positions of the last match's groups. Owned by one task at a time
/// (a stage's expression state); each stage makes its own with ``RegexPattern/makeMatcher()``.
public final class RegexMatcher: @unchecked Sendable {
    // @unchecked: the match data is written by `matches` and read by `group` on the one task that owns this
    // matcher; it is never shared between tasks.
    public let pattern: RegexPattern
    private let data: OpaquePointer?
    private var groupsSet = 0

    fileprivate init(_ pattern: RegexPattern) {
        self.pattern = pattern
        data = pattern.makeMatchData()
    }

    deinit { if let data { pcre2_match_data_free_8(data) } }

    /// True when the pattern matches somewhere in `bytes`, valid UTF-8 (such as a Swift string's).
    public func matches(_ bytes: UnsafeRawBufferPointer) throws(RegexMatchError) -> Bool {
        guard let data else { throw RegexMatchError(message: "out of memory") }
        groupsSet = try pattern.match(bytes, data)
        return groupsSet > 0
    }

    /// True when the pattern matches somewhere in `bytes`, which may be invalid UTF-8 (raw input): PCRE2 checks
    /// them first, and invalid UTF-8 throws.
    public func matches(unchecked bytes: UnsafeRawBufferPointer) throws(RegexMatchError) -> Bool {
        guard let data else { throw RegexMatchError(message: "out of memory") }
        groupsSet = try pattern.match(bytes, data, checked: true)
        return groupsSet > 0
    }

    /// True when the pattern matches somewhere in `text`.
    public func matches(_ text: String) throws(RegexMatchError) -> Bool {
        var text = text
        return try text.withUTF8 { bytes in
            Result { () throws(RegexMatchError) in try matches(UnsafeRawBufferPointer(bytes)) }
        }.get()
    }

    /// The byte range group `number` matched in the last successful match (0: the whole match); `nil` when the
    /// group took no part in it.
    public func group(_ number: Int) -> Range<Int>? {
        guard let data, number < groupsSet, let ovector = pcre2_get_ovector_pointer_8(data) else { return nil }
        let start = ovector[2 * number]
        let end = ovector[2 * number + 1]
        // PCRE2_UNSET (all bits set) marks a group that did not take part.
        guard start != ~0, end >= start else { return nil }
        return start..<end
    }
}

/// A pattern that did not compile.
public struct RegexError: Error, Sendable, Equatable, CustomStringConvertible {
    /// PCRE2's message, such as "missing closing parenthesis".
    public let message: String
    /// Where in the pattern's UTF-8 bytes PCRE2 found the problem.
    public let byteOffset: Int

    public var description: String { "\(message) at offset \(byteOffset)" }
}

/// A match that failed for a reason other than no match: too much backtracking, or no memory.
public struct RegexMatchError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
