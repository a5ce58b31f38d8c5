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
        switch self {
        case .json:
            if scanner.isCanonical(bytes) {
                return Event(
                    canonicalJSON: Array(bytes), topLevelKeys: scanner.topLevelKeys, isFlat: scanner.isFlat,
                    ingestNanos: ingestNanos)
            }
            return Event(try JSONReader.parse(bytes), ingestNanos: ingestNanos)
        case .text:
            var text: [UInt8] = []
            text.reserveCapacity(bytes.count + 16)
            text.append(contentsOf: #"{"message":"#.utf8)
            JSONWriter.writeString(Self.message(bytes), to: &text)
            text.append(UInt8(ascii: "}"))
            // One string field: flat unless the writer had to escape something in it.
            return Event(
                canonicalJSON: text, topLevelKeys: Self.messageKey, isFlat: !text.contains(UInt8(ascii: "\\")),
                ingestNanos: ingestNanos)
        }
    }

    private static let messageKey = KeySignature(keys: ["message"])

    /// A line's text: without a carriage return before its end, invalid UTF-8 replaced.
    private static func message(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        var text = bytes
        if text.last == UInt8(ascii: "\r") { text = UnsafeBufferPointer(rebasing: text.dropLast()) }
        return String(decoding: text, as: UTF8.self)
    }
}
