public import SluiceCore

/// How a line-writing sink encodes events.
public enum LineEncoding: String, ConfigChoice {
    /// The event as compact JSON.
    case json
    /// Text: the `template` rendered, or without one the event's `message` string (JSON for events without one).
    case text
}

/// The `encoding` and `template` options of a line-writing sink, and the encoding of one event into one line.
public struct LineFormat: Sendable {
    /// JSON or text.
    public let encoding: LineEncoding
    /// With `encoding: text`, the text of each line.
    public let template: Template?

    /// Reads `encoding` and `template`; a template implies text.
    init(reading options: ConfigMapping) throws(InvalidConfig) {
        let encodingNode = options.value("encoding")
        let encoding = encodingNode?.choice(LineEncoding.self)
        var template: Template?
        if let node = options.value("template") {
            if encoding == .json, node.writtenText != nil {
                options.log.error("a template needs 'encoding: text'", at: node.mark)
            }
            template = node.template()
        }
        try options.validated()
        self.template = template
        self.encoding = template == nil ? encoding ?? .json : .text
    }

    /// An encoder of events one after another in this format.
    func encoder() -> Encoder { Encoder(format: self) }

    /// Encodes events one after another, remembering where the last one's `message` was in its text, so that a
    /// text sink finds the next one's with one comparison (the search was a quarter of a text sink's time).
    struct Encoder {
        let format: LineFormat
        private var message = FieldLocator("message")
        private static let messagePath: [PathStep] = [.key("message")]

        init(format: LineFormat) {
            self.format = format
        }

        /// Appends the event's line, newline included; on a template error nothing is appended.
        mutating func append(_ event: Event, to output: inout [UInt8]) throws(EvaluationError) {
            let start = output.count
            switch format.encoding {
            case .json:
                event.writeJSON(to: &output)
            case .text:
                // Fields are read from the event's text where it has one: a text line is never parsed whole.
                if let template = format.template {
                    do {
                        try template.render(event, to: &output)
                    } catch {
                        output.removeLast(output.count - start)
                        throw error
                    }
                } else if event.appendPlainString(&message, to: &output) {
                } else if event.appendString(at: Self.messagePath, to: &output) {
                } else {
                    event.writeJSON(to: &output)
                }
            }
            output.append(UInt8(ascii: "\n"))
        }
    }
}
