/// One event flowing through a pipeline: a JSON value and the moment it entered Sluice.
///
/// An event read as canonical JSON text (see ``CanonicalJSONScanner``) keeps that text instead of a parsed value:
/// a filter reads the fields it needs straight from the bytes, a map that only adds fields appends them, and a
/// sink writes the bytes as they are. Anything else parses the text once, on first use, and from then on the
/// event holds the value.
public struct Event: Sendable {
    // 64 bytes in all, in this order (the flag fills the byte after the value's tag, the signature is 24 bytes): at 80
    // bytes an event spanned one or two cache lines of its batch, and scenario 3, whose filter moves and drops most
    // events on the decoding threads, ran 8 to 14 % faster at 64 (series of 41 and 31 alternating runs), 20 maps and
    // the aggregate 3 to 5 %, pass-through the same (`EventLayoutTests`).

    /// Canonical JSON text of the event's value, or empty when `parsed` holds the value.
    private var text: [UInt8]
    private var parsed: JSONValue
    /// True when `text` is known to be flat (``CanonicalJSONScanner/isFlat``).
    private var textIsFlat = false
    /// When a source created the event, in ``MonotonicClock`` nanoseconds; sinks measure latency from it.
    public var ingestNanos: UInt64
    /// The top-level keys of `text`, as far as known.
    private var topLevelKeys: KeySignature

    /// An event holding `value`; `ingestNanos` is when it entered Sluice (sources set it).
    public init(_ value: JSONValue, ingestNanos: UInt64 = 0) {
        text = []
        parsed = value
        topLevelKeys = .unknown
        self.ingestNanos = ingestNanos
    }

    /// The event `json` holds: one JSON value, checked. Text Sluice would write back byte for byte is kept as it
    /// is (see ``CanonicalJSONScanner``); anything else is parsed, and invalid JSON throws.
    public init(json: [UInt8], ingestNanos: UInt64 = 0) throws(JSONError) {
        var scanner = CanonicalJSONScanner()
        let canonical = json.withUnsafeBufferPointer { scanner.isCanonical($0) }
        if canonical {
            self.init(
                canonicalJSON: json, topLevelKeys: scanner.topLevelKeys, isFlat: scanner.isFlat,
                ingestNanos: ingestNanos)
        } else {
            self.init(try JSONReader.parse(json), ingestNanos: ingestNanos)
        }
    }

    /// An event holding `text` unchecked: only the scanner's callers and the writers of event text in this package
    /// (the simulator) may make one. `text` must be exactly what ``JSONWriter`` writes for its value, with ASCII
    /// keys; `topLevelKeys` must include its top-level keys, and `isFlat` be true only for flat text
    /// (``CanonicalJSONScanner/isFlat``). Text that breaks these rules gives wrong field values, but every reader
    /// of event text stays within its bytes (``CanonicalJSON``).
    package init(
        canonicalJSON text: [UInt8], topLevelKeys: KeySignature = .unknown, isFlat: Bool = false,
        ingestNanos: UInt64 = 0
    ) {
        // Empty text is how an event says it holds a parsed value instead.
        precondition(!text.isEmpty, "Event text cannot be empty.")
        self.text = text
        parsed = .null
        self.topLevelKeys = topLevelKeys
        textIsFlat = isFlat
        self.ingestNanos = ingestNanos
    }

    /// The event's data. On an event that still holds its text, every read parses the text: a getter cannot keep
    /// what it parsed in a value type without a shared box per event (an allocation and a reference count for
    /// every event, which is what keeping the text saves). So stages read single fields with ``lookup(_:)``, which
    /// does not parse, and a stage that needs the whole value reads it once (or assigns it back, after which the
    /// event holds the parsed value).
    public var value: JSONValue {
        get {
            guard !text.isEmpty else { return parsed }
            // Canonical text is valid JSON, so this parse does not fail (text that breaks the rules reads as null).
            return (try? JSONReader.parse(text)) ?? .null
        }
        set {
            text = []
            textIsFlat = false
            parsed = newValue
        }
    }

    /// True while the event still holds its text, unparsed.
    public var isText: Bool { !text.isEmpty }

    /// The event as compact JSON text, as the `stdout` sink writes it.
    public var jsonText: String {
        var bytes: [UInt8] = []
        writeJSON(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the event as compact JSON.
    public func writeJSON(to output: inout [UInt8]) {
        if text.isEmpty { JSONWriter.write(parsed, to: &output) } else { output.append(contentsOf: text) }
    }

    /// The value at `steps`, read from the text without parsing the rest when the event still has one.
    public func lookup(_ steps: [PathStep]) -> JSONValue? {
        guard !text.isEmpty else { return Evaluator.lookup(steps, in: parsed) }
        return text.withUnsafeBufferPointer { text in
            switch CanonicalJSON.find(steps, in: text, topLevelKeys: topLevelKeys, flat: textIsFlat) {
            case .found(let range): return Self.value(UnsafeBufferPointer(rebasing: text[range]))
            case .missing: return nil
            case .unsupported: return Evaluator.lookup(steps, in: (try? JSONReader.parse(text)) ?? .null)
            }
        }
    }

    /// Appends the string at `steps` as UTF-8 (not as JSON) to `output`: straight from the event's text when it
    /// has no escapes, so a text sink writes a line without making a string. False, appending nothing, when the
    /// value is missing or not a string.
    package func appendString(at steps: [PathStep], to output: inout [UInt8]) -> Bool {
        if !text.isEmpty {
            let copied = text.withUnsafeBufferPointer { text -> Bool in
                guard
                    case .found(let range) = CanonicalJSON.find(
                        steps, in: text, topLevelKeys: topLevelKeys, flat: textIsFlat),
                    let string = CanonicalJSON.plainContents(
                        of: UnsafeBufferPointer(rebasing: text[range]), flat: textIsFlat)
                else { return false }
                output.append(contentsOf: string)
                return true
            }
            if copied { return true }
        }
        guard case .string(let string)? = lookup(steps) else { return false }
        output.append(contentsOf: string.utf8)
        return true
    }

    /// The value a field's text writes, with the commonest numbers and strings read without a JSON reader.
    static func value(_ text: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        CanonicalJSON.scalar(text)?.value ?? CanonicalJSON.plainString(text)
            ?? (try? JSONReader.parse(text))
    }

    /// Calls `body` with the event's text, its top-level key signature and flatness; `nil` for a parsed event.
    package func withText<Result>(_ body: (UnsafeBufferPointer<UInt8>, KeySignature, Bool) -> Result?) -> Result? {
        guard !text.isEmpty else { return nil }
        return text.withUnsafeBufferPointer { body($0, topLevelKeys, textIsFlat) }
    }

    /// The time at `steps` in epoch milliseconds, read straight from the event's text when it is an RFC 3339
    /// string without escapes or an integer there (an event time, without making a string or a value first); `nil`
    /// otherwise, when the caller takes the general way (``lookup(_:)``) and its messages.
    public func epochMillis(at steps: [PathStep]) -> Int64? {
        guard !text.isEmpty else { return nil }
        return text.withUnsafeBufferPointer { text -> Int64? in
            guard
                case .found(let range) = CanonicalJSON.find(
                    steps, in: text, topLevelKeys: topLevelKeys, flat: textIsFlat)
            else { return nil }
            return Self.epochMillis(UnsafeBufferPointer(rebasing: text[range]))
        }
    }

    /// Epoch milliseconds from a value's text: an RFC 3339 string without escapes, or an integer.
    static func epochMillis(_ value: UnsafeBufferPointer<UInt8>) -> Int64? {
        if value.count >= 2, value[0] == UInt8(ascii: "\""), value[value.count - 1] == UInt8(ascii: "\""),
            !value.contains(UInt8(ascii: "\\"))
        {
            return RFC3339.parse(bytes: UnsafeBufferPointer(rebasing: value[1..<(value.count - 1)]))
        }
        if case .int(let millis)? = CanonicalJSON.scalar(value) { return millis }
        return nil
    }

    /// Sets the value at `path`. On an event still holding the text of an object, a new top-level key is appended
    /// to the text; anything else parses the event and sets the value like ``EventPath/set(_:in:)``.
    public mutating func set(_ path: EventPath, to newValue: JSONValue) throws(EvaluationError) {
        if path.keys.count == 1, !text.isEmpty, text.first == UInt8(ascii: "{"), text.last == UInt8(ascii: "}"),
            Self.keysAreASCII(newValue)
        {
            // The same search a lookup does; `.unsupported` (a key needing escapes) falls through to the parse.
            let lookup = text.withUnsafeBufferPointer { text in
                CanonicalJSON.field(path.keys[0], inObjectAt: 0, of: text, keys: topLevelKeys, flat: textIsFlat)
            }
            if case .missing = lookup {
                var key = path.keys[0]
                key.withUTF8 { key in appendMissingField(key, hash: KeySignature.hash(key), newValue) }
                return
            }
        }
        var value = self.value
        self.value = .null
        defer { self.value = value }
        try path.set(newValue, in: &value)
    }
}

extension Event {
    /// The event's text buffer, taken out for ``TextRecycler`` (the event is left holding null); `nil` when it
    /// holds a parsed value instead.
    package mutating func takeText() -> [UInt8]? {
        guard !text.isEmpty else { return nil }
        return exchange(&text, with: [])
    }

    /// A copy of the event that shares no text with it, for another task to hold (a fan-out's other consumer,
    /// another output of a route): its text is copied into a buffer from `spare`.
    ///
    /// Two tasks holding one text would be correct Swift: copy-on-write has the last holder append to it in place,
    /// and a decoder fill it again, only once every other holder let go. But what orders those holders' reads
    /// before that write is the reference count, which ThreadSanitizer cannot see, so the sanitized tests report
    /// it as a race (Tests/Sanitizers/CopyOnWriteHandOff.swift) and could not tell a real one from it. A parsed
    /// value is shared: the event holds it while a change copies it, so it is never written in place.
    ///
    /// `mutating` only so that the event is read where it is: lent to a method as `self`, Swift 6.3 copied it
    /// (a retain and a release of its text, a cache line the holder of the original works on from the other core).
    package mutating func copy(into spare: inout SpareTexts) -> Event {
        guard !text.isEmpty else { return self }
        var copied = spare.next()
        text.withUnsafeBufferPointer { copied.append(contentsOf: $0) }
        return Event(canonicalJSON: copied, topLevelKeys: topLevelKeys, isFlat: textIsFlat, ingestNanos: ingestNanos)
    }

    /// Sets the top-level field `locator` names to `newValue` by appending it to the event's text, when the event
    /// holds object text without that field: what ``set(_:to:)`` does for a one-key path, with the key's bytes and
    /// hash prepared once. Returns false, changing nothing, in every other case; the caller then sets by path.
    package mutating func appendField(_ locator: inout FieldLocator, _ newValue: JSONValue) -> Bool {
        guard Self.keysAreASCII(newValue), canAppend(&locator) else { return false }
        locator.key.withUnsafeBufferPointer { appendMissingField($0, hash: locator.hash, newValue) }
        return true
    }

    /// ``appendField(_:_:)`` for a number or a boolean (a numeric program's result), written from `scalar` with no
    /// value made. False, changing nothing, where that one would be false, and for `{}`.
    package mutating func appendField(_ locator: inout FieldLocator, scalar: Scalar) -> Bool {
        guard text.count > 2, canAppend(&locator) else { return false }
        CanonicalJSON.appendField(locator, scalar, to: &text)
        topLevelKeys.insert(hash: locator.hash)
        return true
    }

    /// True when the event holds object text without the plain top-level field `locator` names.
    private func canAppend(_ locator: inout FieldLocator) -> Bool {
        guard locator.isPlain, text.count >= 2, text.first == UInt8(ascii: "{"), text.last == UInt8(ascii: "}") else {
            return false
        }
        guard topLevelKeys.mayContain(hash: locator.hash) else { return true }
        let lookup = text.withUnsafeBufferPointer { text in
            CanonicalJSON.field(&locator, in: text, keys: topLevelKeys, flat: textIsFlat)
        }
        guard case .missing = lookup else { return false }
        return true
    }

    /// Appends `"key":value` to the object text, which must not have `key` (plain ASCII, `hash` its signature hash).
    private mutating func appendMissingField(_ key: UnsafeBufferPointer<UInt8>, hash: UInt64, _ value: JSONValue) {
        let start = text.count
        CanonicalJSON.appendField(key, value, to: &text)
        topLevelKeys.insert(hash: hash)
        switch value {
        case .null, .bool, .int, .double:
            break
        case .string, .array, .object:
            // Still flat if what was appended has no container and no escape (a brace in a string counts too).
            if textIsFlat {
                textIsFlat = !text[start...].contains {
                    $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "[")
                }
            }
        }
    }

    /// True when every object key inside `value` is ASCII, as event text requires (lookups compare key bytes,
    /// where Swift would compare non-ASCII keys by canonical equivalence).
    fileprivate static func keysAreASCII(_ value: JSONValue) -> Bool {
        switch value {
        case .object(let object):
            object.fields.allSatisfy { $0.key.utf8.allSatisfy { $0 < 0x80 } && keysAreASCII($0.value) }
        case .array(let items): items.allSatisfy(keysAreASCII)
        default: true
        }
    }
}

extension Event: Hashable {
    /// Events are equal when their values and ingest times are, whether they hold text or a parsed value.
    public static func == (left: Event, right: Event) -> Bool {
        left.ingestNanos == right.ingestNanos && left.value == right.value
    }

    /// Hashes the event's value, whether it holds text or a parsed value.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(value)
        hasher.combine(ingestNanos)
    }
}

extension Array where Element == Event {
    /// Keeps, in order, the events for which `body` returns true, letting `body` change each one on the way: the
    /// single in-place pass that every stage uses, so a stage allocates no second array per batch. The text buffers
    /// of the events dropped go to ``TextRecycler`` for the decoders to fill again.
    ///
    /// Through the array's buffer: the array's own `swapAt` copies the events it swaps (a retain and a release of
    /// each), the buffer's moves them.
    public mutating func retainEvents(_ body: (inout Event) -> Bool) {
        let kept = withUnsafeMutableBufferPointer { events in
            var kept = 0
            for index in events.indices where body(&events[index]) {
                if kept != index { events.swapAt(kept, index) }
                kept += 1
            }
            return kept
        }
        TextRecycler.shared.recycle(&self, from: kept)
    }

    /// A copy of each event, in order, that shares no text with it (``Event/copy(into:)``), the texts copied into
    /// buffers from `spare`.
    package mutating func copies(into spare: inout SpareTexts) -> [Event] {
        let count = self.count
        return withUnsafeMutableBufferPointer { events in
            [Event](unsafeUninitializedCapacity: count) { copies, initialized in
                for index in events.indices {
                    copies.initializeElement(at: index, to: events[index].copy(into: &spare))
                }
                initialized = count
            }
        }
    }

    /// Calls `body` with each event in place, in order. An event read through the array's subscript and lent to a
    /// function that throws a typed error is copied first (a retain and a release, with Swift 6.3's optimizer),
    /// as is each one a `for`-`in` loop gives; one lent from here is not.
    public mutating func forEachInPlace(_ body: (inout Event) -> Void) {
        withUnsafeMutableBufferPointer { events in
            for index in events.indices { body(&events[index]) }
        }
    }
}
