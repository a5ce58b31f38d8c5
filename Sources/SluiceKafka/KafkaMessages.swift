/// Messages for one topic, their keys and values back to back in one buffer, to be queued together by
/// ``KafkaProducer/produce(_:_:to:)``: librdkafka then reads its clocks and takes the topic's lock once for them
/// all, not once a message.
public struct KafkaMessages {
    private var bytes: [UInt8] = []
    private(set) var entries: [Entry] = []

    struct Entry {
        var keyStart: Int
        /// -1: the message has no key.
        var keyCount: Int
        var valueStart: Int
        var valueCount: Int
        var token: UInt
    }

    public init() {}

    public var count: Int { entries.count }

    /// The token the message at `index` was appended with.
    public func token(at index: Int) -> UInt { entries[index].token }

    /// Appends a message: `writeKey` appends its key to the buffer it is given and says whether there is one,
    /// then `writeValue` appends its value. When either throws, nothing of the message is kept.
    public mutating func append(
        token: UInt, writeKey: (inout [UInt8]) throws -> Bool, writeValue: (inout [UInt8]) throws -> Void
    ) rethrows {
        let keyStart = bytes.count
        do {
            let hasKey = try writeKey(&bytes)
            let valueStart = bytes.count
            try writeValue(&bytes)
            entries.append(
                Entry(
                    keyStart: keyStart, keyCount: hasKey ? valueStart - keyStart : -1, valueStart: valueStart,
                    valueCount: bytes.count - valueStart, token: token))
        } catch {
            bytes.removeSubrange(keyStart...)
            throw error
        }
    }

    /// Empties the messages, keeping the buffers' room.
    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
    }

    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        bytes.withUnsafeBytes(body)
    }
}
