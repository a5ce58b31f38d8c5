/// How a source turns one line or message into an event.
public enum EventDecoding: String, ConfigChoice {
    /// The bytes are one JSON value.
    case json
    /// The bytes are text: the event is `{"message": "<text>"}`; invalid UTF-8 is replaced with U+FFFD.
    case text

    /// Decodes `bytes` into an event. JSON that is canonical text stays text (so it is parsed only if a stage
    /// needs more than its fields, and written back as it came); text becomes the text of its message object.
    public func decodeEvent(
        _ bytes: UnsafeBufferPointer<UInt8>, scanner: inout CanonicalJSONScanner, ingestNanos: UInt64
    ) throws(JSONError) -> Event {
        var none = SpareTexts(nil)
        return try decodeEvent(bytes, scanner: &scanner, ingestNanos: ingestNanos, reusing: &none)
    }

    /// ``decodeEvent(_:scanner:ingestNanos:)`` writing the event's text into a buffer from `spare`, when it has
    /// one, instead of a new allocation.
    package func decodeEvent(
        _ bytes: UnsafeBufferPointer<UInt8>, scanner: inout CanonicalJSONScanner, ingestNanos: UInt64,
        reusing spare: inout SpareTexts
    ) throws(JSONError) -> Event {
        switch self {
        case .json:
            if scanner.isCanonical(bytes) {
                var text = spare.next()
                text.reserveCapacity(bytes.count + Self.appendRoom)
                text.append(contentsOf: bytes)
                return Event(
                    canonicalJSON: text, topLevelKeys: scanner.topLevelKeys, isFlat: scanner.isFlat,
                    ingestNanos: ingestNanos)
            }
            return Event(try JSONReader.parse(bytes), ingestNanos: ingestNanos)
        case .text:
            var line = bytes
            if line.last == UInt8(ascii: "\r") { line = UnsafeBufferPointer(rebasing: line.dropLast()) }
            var text = spare.next()
            text.reserveCapacity(line.count + 14 + Self.appendRoom)
            text.append(contentsOf: #"{"message":"#.utf8)
            if let start = line.baseAddress, PlainBytes.skip(from: start, to: start + line.count) == start + line.count
            {
                // The common line, ASCII needing no escape, found so in one pass.
                text.append(UInt8(ascii: "\""))
                text.append(contentsOf: line)
                text.append(UInt8(ascii: "\""))
            } else if JSONWriter.isASCII(line) {
                JSONWriter.writeString(utf8: line, to: &text)
            } else {
                // Invalid UTF-8 is replaced with U+FFFD.
                JSONWriter.writeString(String(decoding: line, as: UTF8.self), to: &text)
            }
            text.append(UInt8(ascii: "}"))
            // One string field: flat unless the writer had to escape something in it (or replace bad UTF-8), which
            // only ever lengthens it.
            return Event(
                canonicalJSON: text, topLevelKeys: Self.messageKey, isFlat: text.count == line.count + 14,
                ingestNanos: ingestNanos)
        }
    }

    private static let messageKey = KeySignature(keys: ["message"])

    /// Bytes of room left after an event's text, so that a map adding a field or two appends in place: growing
    /// the text instead allocated on the map's thread and freed on the decoder's, and with the decoders on both
    /// cores the allocator's locks were a fifth of a one-map pipeline's time.
    static let appendRoom = 64
}
