/// Why a JSON text was rejected, and where.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, for example "unterminated string".
    public let reason: String
    /// The byte offset of the problem within the text, starting at 0.
    public let offset: Int

    /// An error with `reason` at byte `offset`.
    public init(_ reason: String, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    /// The reason and where: `unterminated string at byte 12` (counted from 1).
    public var description: String { "\(reason) at byte \(offset + 1)" }
}
