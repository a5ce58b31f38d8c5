/// How a source turns one line or message into an event.
public enum EventDecoding: String, ConfigChoice {
    /// The bytes are one JSON value.
    case json
    /// The bytes are text: the event is `{"message": "<text>"}`; invalid UTF-8 is replaced with U+FFFD.
    case text

    /// Decodes `bytes`, or throws when they are not valid in this decoding.
    public func decode(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONError) -> JSONValue {
        switch self {
        case .json:
            return try JSONReader.parse(bytes)
        case .text:
            var text = bytes
            if text.last == UInt8(ascii: "\r") { text = UnsafeBufferPointer(rebasing: text.dropLast()) }
            return .object(
                JSONObject(uniqueFields: [.init(key: "message", value: .string(String(decoding: text, as: UTF8.self)))])
            )
        }
    }
}
