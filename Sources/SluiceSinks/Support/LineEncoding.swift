public import SluiceCore

/// How a line-writing sink turns an event into one line.
public enum LineEncoding: String, ConfigChoice {
    /// The event as compact JSON.
    case json
    /// The event's `message` string as it is; events without one are written as JSON.
    case text

    /// Appends the event's line, newline included.
    func append(_ value: JSONValue, to output: inout [UInt8]) {
        if self == .text, case .string(let message)? = value["message"] {
            output.append(contentsOf: message.utf8)
        } else {
            JSONWriter.write(value, to: &output)
        }
        output.append(UInt8(ascii: "\n"))
    }
}
