/// Values that threads write at once, one each, kept in cache lines of their own.
///
/// Neighbours in an array share a cache line wherever the array happens to fall in memory, and a line that two
/// cores write moves between them on every write: the two threads decoding a read (their scanners) and the parts
/// of the simulator's fleet each write their state for every event. Each value here gets whole 128-byte blocks (a
/// core's prefetcher fetches lines in pairs), aligned, that nothing else uses.
final class Separated<Value>: @unchecked Sendable {
    // @unchecked: the values are reached through pointers, and the owner lets one thread at a time use each (the
    // threads or parts of one `concurrentPerform`, then the owner itself); this class only owns their memory.
    private static var stride: Int { max(1, (MemoryLayout<Value>.size + 127) / 128) * 128 }
    private let memory: UnsafeMutableRawPointer
    /// How many values there are.
    let count: Int

    init(_ values: [Value]) {
        count = values.count
        memory = .allocate(byteCount: max(1, values.count) * Self.stride, alignment: 128)
        for (index, value) in values.enumerated() {
            (memory + index * Self.stride).bindMemory(to: Value.self, capacity: 1).initialize(to: value)
        }
    }

    /// Value `index`, in place.
    subscript(index: Int) -> UnsafeMutablePointer<Value> {
        precondition(index >= 0 && index < count, "No value \(index) of \(count).")
        return (memory + index * Self.stride).assumingMemoryBound(to: Value.self)
    }

    deinit {
        for index in 0..<count { self[index].deinitialize(count: 1) }
        memory.deallocate()
    }
}
