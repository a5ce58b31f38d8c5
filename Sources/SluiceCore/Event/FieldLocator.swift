#if canImport(Glibc)
    internal import Glibc
#endif

/// A top-level field name prepared for reading it from event after event: its bytes and key-signature hash,
/// computed once, and the offset where it was found in the last event's text, tried first in the next. Machine-
/// written events put a field at the same offset line after line, so a stage that reads a field from every event
/// (an aggregate's time, group and values) finds it with one comparison instead of a search.
package struct FieldLocator: Sendable {
    /// The name.
    package let name: String
    /// The name as a path, for events that are not text.
    let steps: [PathStep]
    let key: [UInt8]
    let hash: UInt64
    /// True when canonical text writes the name as its bytes (ASCII needing no escape).
    let isPlain: Bool
    /// `"name":`, compared at an offset of flat text in one or two loads.
    let pattern: KeyPattern
    /// Where the name's bytes started in the last event's text (0: not known yet).
    var hint = 0
    /// For times: the first 16 bytes (`YYYY-MM-DDTHH:MM`) of the last RFC 3339 time read, and that minute in epoch
    /// milliseconds, so that the next time in the same minute only reads its seconds.
    var minute: (prefix: (UInt64, UInt64), millis: Int64)?

    package init(_ name: String) {
        self.name = name
        steps = [.key(name)]
        key = Array(name.utf8)
        isPlain = key.allSatisfy { $0 >= 0x20 && $0 < 0x80 && $0 != 0x22 && $0 != 0x5C }
        hash = key.withUnsafeBufferPointer { KeySignature.hash($0) }
        pattern = KeyPattern(key)
    }

    /// A locator for `steps` when they are a single key; `nil` for anything else.
    package init?(_ steps: [PathStep]?) {
        guard let steps, steps.count == 1, case .key(let name) = steps[0] else { return nil }
        self.init(name)
    }
}

/// A key as flat text writes it, quotes and colon included (`"name":`), in words, so that it is compared where a
/// field is expected in one or two eight-byte loads rather than by a call to `memcmp`: most keys are under sixteen
/// bytes with the three around them, and the check is made for every field read. Plain values only, so that
/// reading it from a locator copies no reference.
struct KeyPattern: Sendable {
    /// The first eight bytes (those there are, under a mask, when it is shorter) and the last eight, which overlap
    /// the first under sixteen.
    private let head: UInt64
    private let mask: UInt64
    private let tail: UInt64
    /// The pattern's length.
    let count: Int

    init(_ key: [UInt8]) {
        let bytes = [UInt8(ascii: "\"")] + key + [UInt8(ascii: "\""), UInt8(ascii: ":")]
        count = bytes.count
        // Loaded from bytes as the text will be, so that the words compare in whatever byte order the machine has.
        func word(_ source: [UInt8], from: Int) -> UInt64 {
            var padded = [UInt8](repeating: 0, count: 8)
            for offset in 0..<8 where from + offset < source.count { padded[offset] = source[from + offset] }
            return padded.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
        }
        head = word(bytes, from: 0)
        mask = word([UInt8](repeating: 0xFF, count: min(8, bytes.count)), from: 0)
        tail = word(bytes, from: max(0, bytes.count - 8))
    }

    /// Whether the pattern starts at `start` in text that ends at `end`; `nil` when loads cannot tell (a pattern
    /// over sixteen bytes, or under eight bytes of text left).
    @inline(__always)
    func isAt(_ start: UnsafePointer<UInt8>, end: UnsafePointer<UInt8>) -> Bool? {
        let available = end - start
        guard available >= count else { return false }
        guard available >= 8, count <= 16 else { return nil }
        let raw = UnsafeRawPointer(start)
        guard raw.loadUnaligned(as: UInt64.self) & mask == head else { return false }
        return count <= 8 || raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self) == tail
    }
}

extension KeyPattern {
    /// Writes the pattern, which must be 16 bytes or fewer, at `start` in one or two eight-byte stores; `start` has
    /// room for 16 bytes, and what follows the pattern there may be overwritten.
    @inline(__always)
    func write(to start: UnsafeMutablePointer<UInt8>) {
        precondition(count <= 16, "Only a pattern of two words or fewer is written as words.")
        let raw = UnsafeMutableRawPointer(start)
        // Under eight bytes, the word's last bytes are zeros, for what follows to overwrite.
        raw.storeBytes(of: head, as: UInt64.self)
        if count > 8 { raw.storeBytes(of: tail, toByteOffset: count - 8, as: UInt64.self) }
    }
}

extension FieldLocator {
    /// True when `"name":` is at `at - 1` in flat text after `{` or `,` (the name at `at`); `at` is at least 2.
    @inline(__always)
    func isKey(at: Int, in base: UnsafePointer<UInt8>, end: UnsafePointer<UInt8>) -> Bool {
        guard base[at - 2] == UInt8(ascii: ",") || base[at - 2] == UInt8(ascii: "{") else { return false }
        if let found = pattern.isAt(base + at - 1, end: end) { return found }
        return base[at - 1] == UInt8(ascii: "\"") && base[at + key.count] == UInt8(ascii: "\"")
            && base[at + key.count + 1] == UInt8(ascii: ":")
            && key.withUnsafeBufferPointer { memcmp(base + at, $0.baseAddress!, $0.count) == 0 }
    }
}

extension Event {
    /// The value of the field `locator` names, like ``lookup(_:)`` with a one-key path; remembers where it was.
    package func lookup(_ locator: inout FieldLocator) -> JSONValue? {
        // A parsed event, or a name text cannot hold as it is, takes the general way.
        guard isText, locator.isPlain else { return lookup(locator.steps) }
        var unsupported = false
        let value = withText { text, keys, flat -> JSONValue? in
            switch CanonicalJSON.field(&locator, in: text, keys: keys, flat: flat) {
            case .found(let range): return Event.value(UnsafeBufferPointer(rebasing: text[range]))
            case .missing: return nil
            case .unsupported:
                unsupported = true
                return nil
            }
        }
        return unsupported ? lookup(locator.steps) : value
    }

    /// The number or boolean in the field `locator` names, read straight from the event's text; `nil` when it is
    /// missing or holds anything else, or the text cannot be read this way (the caller takes the general way).
    package func scalar(_ locator: inout FieldLocator) -> Scalar? {
        guard isText, locator.isPlain else { return lookup(locator.steps).flatMap(Scalar.init) }
        return withText { text, keys, flat -> Scalar? in
            if flat, !locator.key.isEmpty { return CanonicalJSON.flatScalar(&locator, in: text, keys: keys) }
            guard case .found(let range) = CanonicalJSON.field(&locator, in: text, keys: keys, flat: flat) else {
                return nil
            }
            return CanonicalJSON.scalar(UnsafeBufferPointer(rebasing: text[range]))
        }
    }

    /// Appends the UTF-8 bytes of the string field `locator` names to `output`, straight from the event's text (as
    /// ``withPlainString(_:_:)`` finds them); false, appending nothing, where that gives `nil`. (Not generic, so that
    /// a sink in another module calls it without looking up generic metadata per event.)
    package func appendPlainString(_ locator: inout FieldLocator, to output: inout [UInt8]) -> Bool {
        withPlainString(&locator) { output.append(contentsOf: $0) } != nil
    }

    /// Calls `body` with the UTF-8 bytes of the string field `locator` names, straight from the event's text, when
    /// it is a string written without escapes; `nil` otherwise (missing, another type, escaped, or a parsed event),
    /// and the caller reads the field's value instead.
    package func withPlainString<Result>(
        _ locator: inout FieldLocator, _ body: (UnsafeRawBufferPointer) -> Result
    ) -> Result? {
        guard isText, locator.isPlain else { return nil }
        return withText { text, keys, flat -> Result? in
            guard case .found(let range) = CanonicalJSON.field(&locator, in: text, keys: keys, flat: flat),
                let string = CanonicalJSON.plainContents(of: UnsafeBufferPointer(rebasing: text[range]), flat: flat)
            else { return nil }
            return body(UnsafeRawBufferPointer(string))
        } ?? nil
    }

    /// Whether the field `locator` names is null or missing (what `== null` asks), read in place from the event's
    /// text; `nil` where the text cannot say this way, and the caller evaluates the field.
    package func isNullOrMissing(_ locator: inout FieldLocator) -> Bool? {
        guard isText, locator.isPlain else { return lookup(locator.steps).map { $0 == .null } ?? true }
        return withText { text, keys, flat -> Bool? in
            switch CanonicalJSON.field(&locator, in: text, keys: keys, flat: flat) {
            case .missing: return true
            // The only value of canonical text that starts with `n` is `null`.
            case .found(let range): return text[range.lowerBound] == UInt8(ascii: "n")
            case .unsupported: return nil
            }
        } ?? nil
    }

    /// Whether the field `locator` names is the string `literal` (ASCII), as `==` compares strings: by canonical
    /// equivalence, which for two byte strings of which one is ASCII is byte equality unless the other holds a
    /// byte over 127 (U+212A KELVIN SIGN equals `K`). Read in place from the event's text; `nil` where it cannot say
    /// this way (an escaped string, or unequal bytes over 127), and the caller evaluates the field. A field that is
    /// missing or not a string is not equal to any string.
    package func equalsASCII(_ locator: inout FieldLocator, _ literal: UnsafeBufferPointer<UInt8>, _ string: String)
        -> Bool?
    {
        guard isText, locator.isPlain else {
            guard case .string(let value)? = lookup(locator.steps) else { return false }
            return value == string
        }
        return withText { text, keys, flat -> Bool? in
            switch CanonicalJSON.field(&locator, in: text, keys: keys, flat: flat) {
            case .missing: return false
            case .unsupported: return nil
            case .found(let range):
                let value = UnsafeBufferPointer(rebasing: text[range])
                guard value[0] == UInt8(ascii: "\"") else { return false }
                guard let contents = CanonicalJSON.plainContents(of: value, flat: flat) else { return nil }
                if contents.count == literal.count,
                    literal.isEmpty || memcmp(contents.baseAddress!, literal.baseAddress!, literal.count) == 0
                {
                    return true
                }
                return contents.allSatisfy { $0 < 0x80 } ? false : nil
            }
        } ?? nil
    }

    /// The two hashes ``StableHash/pair(_:followedBy:secondSeed:)`` gives for the JSON text of the field `locator`
    /// names followed by `last`, read in place: the hashes of that text copied out with `last` after it, without the
    /// copy. `nil` for a parsed event, a name text cannot hold as it is, or a missing field.
    package func valueTextHashes(_ locator: inout FieldLocator, followedBy last: UInt8, secondSeed: UInt64)
        -> (UInt64, UInt64)?
    {
        guard isText, locator.isPlain else { return nil }
        return withText { text, keys, flat -> (UInt64, UInt64)? in
            guard case .found(let range) = CanonicalJSON.field(&locator, in: text, keys: keys, flat: flat) else {
                return nil
            }
            let value = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: text[range]))
            return StableHash.pair(value, followedBy: last, secondSeed: secondSeed)
        } ?? nil
    }

    /// `state` with the JSON text of each field `locators` name, each followed by `last`, absorbed in order
    /// (``StableHash/absorb(_:_:followedBy:)``), read in place in one pass; `nil` when the event is not text or a
    /// field is missing or cannot be read in place.
    package func absorbValueTexts(
        _ locators: UnsafeMutableBufferPointer<FieldLocator>, followedBy last: UInt8, into state: (UInt64, UInt64)
    ) -> (UInt64, UInt64)? {
        guard isText else { return nil }
        return withText { text, keys, flat -> (UInt64, UInt64)? in
            var state = state
            for index in locators.indices {
                guard case .found(let range) = CanonicalJSON.field(&locators[index], in: text, keys: keys, flat: flat)
                else { return nil }
                let value = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: text[range]))
                state = StableHash.absorb(state, value, followedBy: last)
            }
            return state
        } ?? nil
    }

    /// The time in the field `locator` names, like ``epochMillis(at:)``; remembers where it was.
    package func epochMillis(_ locator: inout FieldLocator) -> Int64? {
        guard isText, locator.isPlain else { return nil }
        return withText { text, keys, flat in
            guard case .found(let range) = CanonicalJSON.field(&locator, in: text, keys: keys, flat: flat) else {
                return nil
            }
            let value = UnsafeBufferPointer(rebasing: text[range])
            // A quoted time in the minute of the last one: only the seconds are new.
            let quoted =
                value.count >= 22 && value[0] == UInt8(ascii: "\"") && value[value.count - 1] == UInt8(ascii: "\"")
            if quoted, let cached = locator.minute {
                let time = UnsafeBufferPointer(rebasing: value[1..<(value.count - 1)])
                let raw = UnsafeRawPointer(time.baseAddress!)
                let prefix = (raw.loadUnaligned(as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
                if prefix == cached.prefix, let within = RFC3339.millisInMinute(time) { return cached.millis + within }
            }
            guard let millis = Event.epochMillis(value) else { return nil }
            if quoted {
                let time = UnsafeBufferPointer(rebasing: value[1..<(value.count - 1)])
                if let within = RFC3339.millisInMinute(time) {
                    let raw = UnsafeRawPointer(time.baseAddress!)
                    locator.minute = (
                        (raw.loadUnaligned(as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                        millis - within
                    )
                }
            }
            return millis
        }
    }
}
