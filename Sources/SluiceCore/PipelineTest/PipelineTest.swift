/// One entry of a pipeline file's `tests:` section: events inserted at transforms' inputs, and what must (or must
/// not) come out of transforms, checked without running any source or sink (``PipelineTestRunner``).
public struct PipelineTest: Sendable {
    /// Its `name`, unique in the file.
    public let name: String
    /// Where the test begins in the file.
    public let mark: FilePosition
    /// The events to insert, in order.
    public let inputs: [Input]
    /// What must come out.
    public let outputs: [Output]
    /// Transforms (or named outputs, `<id>.<output>`) that must emit nothing.
    public let noOutputFrom: [Reference]

    /// Events inserted into a transform's input as if they had come from upstream.
    public struct Input: Sendable {
        /// The transform whose input receives them.
        public let insertAt: String
        /// The events, in order.
        public let events: [JSONValue]
        /// Where `insert_at` was written.
        public let mark: FilePosition
    }

    /// What one transform (or one named output) must emit.
    public struct Output: Sendable {
        /// What is checked.
        public let extractFrom: Reference
        /// Met when at least one event emitted meets all of them (an expression that is `true`).
        public let conditions: [Condition]
        /// When given, exactly this many events must be emitted.
        public let count: Int?
    }

    /// A condition on an emitted event, with where it was written.
    public struct Condition: Sendable {
        /// The condition, compiled.
        public let expression: Expression
        /// Where it was written.
        public let mark: FilePosition
    }

    /// A transform or one of its named outputs, as written.
    public struct Reference: Sendable {
        /// `<id>` or `<id>.<output>`.
        public let text: String
        /// Where it was written.
        public let mark: FilePosition
    }
}
