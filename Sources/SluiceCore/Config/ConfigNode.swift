package import SluiceYAML

/// A YAML node being read as configuration: typed accessors that record a diagnostic at the node when the value
/// has the wrong type or range, and substitute `${NAME}` and `${NAME:-default}` from the environment in scalars.
///
/// Every accessor returns `nil` after recording an error, so a reader can go on and find the next problem.
public struct ConfigNode {
    /// The node itself.
    package let node: YAMLNode
    /// The name the node has in messages, for example `'max_events'`.
    public let name: String
    /// Where diagnostics go; readers record their own checks here.
    public let log: DiagnosticLog
    let environment: [String: String]

    init(_ node: YAMLNode, name: String, log: DiagnosticLog, environment: [String: String]) {
        self.node = node
        self.name = name
        self.log = log
        self.environment = environment
    }

    /// Where the node starts.
    public var mark: FilePosition { FilePosition(node.mark) }

    // MARK: - Scalars

    /// The scalar's text with environment variables substituted.
    public func string() -> String? {
        guard case .scalar(let scalar) = node.content else {
            log.error("expected a string for \(name), found \(node.kindDescription)", at: mark)
            return nil
        }
        return interpolate(scalar.value)
    }

    /// A whole number within `range`.
    public func int(in range: ClosedRange<Int>) -> Int? {
        guard let text = plainScalar(expecting: "an integer") else { return nil }
        guard let value = Int(text.filter { $0 != "_" }) else {
            log.error(
                "expected an integer for \(name), found \(shown(text))", at: mark,
                notes: ["\(name) is a whole number from \(range.lowerBound) to \(range.upperBound)"])
            return nil
        }
        guard range.contains(value) else {
            log.error("\(name) must be between \(range.lowerBound) and \(range.upperBound), found \(value)", at: mark)
            return nil
        }
        return value
    }

    /// A number within `range`.
    public func double(in range: ClosedRange<Double>) -> Double? {
        guard let text = plainScalar(expecting: "a number") else { return nil }
        guard let value = Double(text), value.isFinite else {
            log.error("expected a number for \(name), found \(shown(text))", at: mark)
            return nil
        }
        guard range.contains(value) else {
            log.error(
                "\(name) must be between \(range.lowerBound.formatted) and \(range.upperBound.formatted), "
                    + "found \(value.formatted)", at: mark)
            return nil
        }
        return value
    }

    /// `true` or `false`.
    public func bool() -> Bool? {
        guard let text = plainScalar(expecting: "true or false") else { return nil }
        switch text {
        case "true": return true
        case "false": return false
        default:
            log.error("expected true or false for \(name), found \(shown(text))", at: mark)
            return nil
        }
    }

    /// One of a fixed set of words, such as an encoding or a policy name.
    public func choice<Choice: ConfigChoice>(_ type: Choice.Type = Choice.self) -> Choice? {
        guard let text = string() else { return nil }
        if let choice = Choice(rawValue: text) { return choice }
        let names = Choice.allCases.map(\.rawValue)
        log.error(
            isFromEnvironment
                ? "the value from the environment is not valid for \(name)" : "unknown value '\(text)' for \(name)",
            at: mark,
            notes: [Suggestion.expectedOneOf(names, given: isFromEnvironment ? nil : text)])
        return nil
    }

    /// A list of strings; a single string is accepted as a list of one.
    public func stringList() -> [(String, FilePosition)]? {
        switch node.content {
        case .scalar:
            return string().map { [($0, mark)] }
        case .sequence(let items):
            var result: [(String, FilePosition)] = []
            for item in items {
                let child = ConfigNode(item, name: "an item of \(name)", log: log, environment: environment)
                if let text = child.string() { result.append((text, child.mark)) }
            }
            return result
        case .mapping:
            log.error("expected a list for \(name), found a mapping", at: mark)
            return nil
        }
    }

    /// The items of a list, each named "an item of ..." in messages; `example` is the note when it is not a list.
    public func list(example: String) -> [ConfigNode]? {
        guard case .sequence(let items) = node.content else {
            log.error("expected a list for \(name), found \(node.kindDescription)", at: mark, notes: [example])
            return nil
        }
        return items.map { ConfigNode($0, name: "an item of \(name)", log: log, environment: environment) }
    }

    /// True when the node is a mapping (for options that accept a list or a mapping).
    public var isMapping: Bool {
        if case .mapping = node.content { return true }
        return false
    }

    /// The node as a mapping of keys to nodes.
    public func mapping() -> ConfigMapping? {
        guard case .mapping(let pairs) = node.content else {
            if case .scalar(let scalar) = node.content, scalar.isPlain, scalar.value.isEmpty || scalar.value == "~" {
                // `key:` with nothing after it: an empty mapping, as in `transforms:`.
                return ConfigMapping(pairs: [], at: node.mark, name: name, log: log, environment: environment)
            }
            log.error("expected a mapping for \(name), found \(node.kindDescription)", at: mark)
            return nil
        }
        return ConfigMapping(pairs: pairs, at: node.mark, name: name, log: log, environment: environment)
    }

    /// An expression, compiled now; a mistake is reported at its own column inside the YAML value.
    public func expression() -> Expression? {
        guard let text = string() else { return nil }
        do {
            return try Expression(text)
        } catch {
            log.error(error.message, at: mark(atOffset: error.offset), notes: error.note.map { [$0] } ?? [])
            return nil
        }
    }

    /// A text template (`"{.device} {.temperature}°C"`), compiled now; a mistake is reported at its own column
    /// inside the YAML value.
    public func template() -> Template? {
        guard let text = string() else { return nil }
        do {
            return try Template(text)
        } catch {
            log.error(error.message, at: mark(atOffset: error.offset), notes: error.note.map { [$0] } ?? [])
            return nil
        }
    }

    /// The position of a character inside a one-line scalar, after the opening quote if there is one. Block
    /// scalars and values spread over lines point at the value's start; in a quoted value, YAML escapes before
    /// the character shift the column by their extra length.
    public func mark(atOffset offset: Int) -> FilePosition {
        guard case .scalar(let scalar) = node.content, !scalar.value.contains("\n") else { return mark }
        switch scalar.style {
        case .plain: return FilePosition(line: mark.line, column: mark.column + offset)
        case .singleQuoted, .doubleQuoted: return FilePosition(line: mark.line, column: mark.column + 1 + offset)
        case .literal, .folded: return mark
        }
    }

    /// True when the value was written with `${...}`: it may hold a secret, so messages never repeat it.
    public var isFromEnvironment: Bool {
        if case .scalar(let scalar) = node.content { return scalar.value.contains("${") }
        return false
    }

    /// The scalar as written in the file, before `${...}` is replaced: safe to show, as it names variables
    /// rather than repeating their values.
    public var writtenText: String? {
        if case .scalar(let scalar) = node.content { return scalar.value }
        return nil
    }

    /// The node as written in the file, for showing a component's options (the API's `/api/pipeline`): scalars as
    /// their text before `${...}` is replaced, so that no value from the environment (a password, a token) is ever
    /// shown, sequences as arrays and mappings as objects.
    public var writtenValue: JSONValue {
        func convert(_ node: YAMLNode) -> JSONValue {
            switch node.content {
            case .scalar(let scalar): return .string(scalar.value)
            case .sequence(let items): return .array(items.map(convert))
            case .mapping(let pairs):
                // A repeated key (an error reported elsewhere) keeps its first place and its last value.
                var object = JSONObject.Builder()
                for pair in pairs {
                    if case .scalar(let key) = pair.key.content { object.set(key.value, convert(pair.value)) }
                }
                return .object(object.object)
            }
        }
        return convert(node)
    }

    /// The value as messages may show it: quoted, or "a value from the environment" when `${...}` supplied it.
    public func shown(_ text: String) -> String {
        isFromEnvironment ? "a value from the environment" : "'\(text)'"
    }

    /// True when the node is the plain scalar `word` (for values like `buffer: unbounded`).
    public func isWord(_ word: String) -> Bool {
        if case .scalar(let scalar) = node.content { return scalar.value == word }
        return false
    }

    private func plainScalar(expecting what: String) -> String? {
        guard case .scalar = node.content else {
            log.error("expected \(what) for \(name), found \(node.kindDescription)", at: mark)
            return nil
        }
        return string()
    }

    // MARK: - Environment

    /// Replaces `${NAME}` and `${NAME:-default}`; `$${` stands for a literal `${`.
    private func interpolate(_ text: String) -> String? {
        guard text.contains("${") else { return text }
        var result = ""
        var rest = Substring(text)
        var failed = false
        while let dollar = rest.firstIndex(of: "$") {
            result += rest[..<dollar]
            let after = rest[dollar...]
            if after.hasPrefix("$${") {
                result += "${"
                rest = after.dropFirst(3)
                continue
            }
            guard after.hasPrefix("${"), let close = after.firstIndex(of: "}") else {
                result += "$"
                rest = after.dropFirst()
                continue
            }
            let body = after[after.index(after.startIndex, offsetBy: 2)..<close]
            let variable: Substring
            var fallback: Substring?
            if let colon = body.firstIndex(of: ":"), body[colon...].hasPrefix(":-") {
                variable = body[..<colon]
                fallback = body[body.index(colon, offsetBy: 2)...]
            } else {
                variable = body
            }
            if variable.isEmpty || !variable.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) {
                log.error(
                    "invalid environment variable reference '${\(body)}' in \(name)", at: mark,
                    notes: ["write ${NAME} or ${NAME:-default}, or $${ for a literal '${'"])
                failed = true
            } else if let value = environment[String(variable)] {
                log.noteEnvironmentValue(value)
                result += value
            } else if let fallback {
                result += fallback
            } else {
                log.error(
                    "environment variable '\(variable)' is not set", at: mark,
                    notes: ["set it, or give a default with ${\(variable):-value}"])
                failed = true
            }
            rest = after[after.index(after: close)...]
        }
        result += rest
        return failed ? nil : result
    }
}

/// A YAML mapping being read as configuration. It remembers which keys were asked for, so that ``finish()`` can
/// report every other key as unknown with a suggestion, and it reports duplicate keys when created.
public final class ConfigMapping {
    /// Where the mapping starts.
    public let mark: FilePosition
    /// The mapping's name in messages, for example `"stdin source 'in'"`.
    public let name: String
    /// Where diagnostics go; component readers record their own checks here.
    public let log: DiagnosticLog
    let environment: [String: String]
    private let entries: [(key: String, keyMark: FilePosition, value: YAMLNode)]
    private var known: [String] = []
    /// The errors recorded before this mapping was read; any beyond them make it invalid.
    private let errorsBefore: Int

    init(pairs: [YAMLPair], at mark: YAMLMark, name: String, log: DiagnosticLog, environment: [String: String]) {
        self.mark = FilePosition(mark)
        self.name = name
        self.log = log
        self.environment = environment
        errorsBefore = log.errorCount
        var entries: [(key: String, keyMark: FilePosition, value: YAMLNode)] = []
        var firstLine: [String: Int] = [:]
        for pair in pairs {
            guard case .scalar(let key) = pair.key.content else {
                log.error(
                    "expected a plain key in \(name), found \(pair.key.kindDescription)",
                    at: FilePosition(pair.key.mark))
                continue
            }
            if key.value == "<<", key.isPlain {
                // YAML 1.1's merge key: libyaml reads it as a plain key, and a silent merge it is not.
                log.error(
                    "merge keys ('<<') are not supported", at: FilePosition(pair.key.mark),
                    notes: ["YAML 1.2 has no merge key; write the keys out, or alias whole values ('buffer: *name')"])
                continue
            }
            if let line = firstLine[key.value] {
                log.error(
                    "duplicate key '\(key.value)' in \(name)", at: FilePosition(pair.key.mark),
                    notes: ["'\(key.value)' was first written at line \(line)"])
                continue
            }
            firstLine[key.value] = pair.key.mark.line
            entries.append((key.value, FilePosition(pair.key.mark), pair.value))
        }
        self.entries = entries
    }

    /// The keys in document order.
    public var keys: [String] { entries.map(\.key) }

    /// Every entry as a key, its position and its value node, in document order; marks all keys as known.
    public func allEntries(naming: (String) -> String) -> [(key: String, keyMark: FilePosition, value: ConfigNode)] {
        entries.map { entry in
            known.append(entry.key)
            return (
                entry.key, entry.keyMark,
                ConfigNode(entry.value, name: naming(entry.key), log: log, environment: environment)
            )
        }
    }

    /// The value for `key`, or `nil` when absent; either way `key` becomes a known key.
    public func value(_ key: String) -> ConfigNode? {
        known.append(key)
        guard let entry = entries.first(where: { $0.key == key }) else { return nil }
        return ConfigNode(entry.value, name: "'\(key)'", log: log, environment: environment)
    }

    /// The value for `key`, recording an error at the mapping when it is absent.
    public func required(_ key: String, note: String) -> ConfigNode? {
        guard let node = value(key) else {
            log.error("\(name) has no '\(key)'", at: mark, notes: [note])
            return nil
        }
        return node
    }

    /// Throws when an error was recorded since this mapping was created (while it, or anything inside it, was
    /// read), so that a config is only made from options that were all valid.
    public func validated() throws(InvalidConfig) {
        if log.errorCount > errorsBefore { throw InvalidConfig() }
    }

    /// `value`, once ``validated()`` passes; a `nil` after a valid read means the reader forgot to record why.
    public func validated<Value>(_ value: Value?) throws(InvalidConfig) -> Value {
        try validated()
        guard let value else {
            log.error("\(name) could not be read", at: mark)
            throw InvalidConfig()
        }
        return value
    }

    /// Records an error for every key that was never asked for, at the key, with the expected keys.
    public func finish() {
        let expected = Array(Set(known)).sorted()
        for entry in entries where !known.contains(entry.key) {
            log.error(
                "unknown key '\(entry.key)' in \(name)", at: entry.keyMark,
                notes: [Suggestion.expectedOneOf(expected, given: entry.key)])
        }
    }
}

/// Thrown by a component's config reader when its options had errors; the diagnostics say what they were.
public struct InvalidConfig: Error, Sendable {
    /// The error a config reader throws after recording its diagnostics.
    public init() {}
}

/// A position in a pipeline file, 1-based, as a person counts lines and characters.
public struct FilePosition: Sendable, Hashable, CustomStringConvertible {
    /// The line, starting at 1.
    public let line: Int
    /// The character column, starting at 1.
    public let column: Int

    /// A position from 1-based `line` and `column`.
    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    init(_ mark: YAMLMark) {
        self.init(line: mark.line, column: mark.column)
    }

    /// `line:column`.
    public var description: String { "\(line):\(column)" }
}

/// A closed set of words a configuration value may take; the raw values are the words users write.
public protocol ConfigChoice: RawRepresentable<String>, CaseIterable, Sendable {}

extension YAMLNode {
    /// "a mapping", "a list" or "'text'", for messages.
    var kindDescription: String {
        switch content {
        case .scalar(let scalar): return "'\(scalar.value)'"
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        }
    }
}

extension Double {
    /// The shortest text for a number: no ".0" on whole numbers.
    var formatted: String {
        self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}
