import Testing

@testable import SluiceSources

#if canImport(Glibc)
    import Glibc
#endif

struct DescriptorReaderTests {
    /// Chunks given back are read into again: each later chunk holds exactly what that read brought, whether it is
    /// longer or shorter than what its storage held before.
    @Test func aRecycledChunkHoldsOnlyWhatItsNextReadBrought() async throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let reader = DescriptorReader(fileDescriptor: ends[0], chunkBytes: 64)
        let pieces = [64, 10, 64, 1, 33, 64, 7].enumerated().map { index, count in
            [UInt8](repeating: UInt8(ascii: "a") + UInt8(index), count: count)
        }
        for piece in pieces {
            // One piece at a time, so that each read brings exactly one.
            try #require(piece.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) } == piece.count)
            guard case .data(let chunk, let count) = await reader.read() else {
                Issue.record("no data for a piece of \(piece.count) bytes")
                return
            }
            #expect(Array(chunk.prefix(count)) == piece)
            reader.recycle(chunk)
        }
        close(ends[1])
        guard case .end = await reader.read() else {
            Issue.record("the input did not end")
            return
        }
    }
}
