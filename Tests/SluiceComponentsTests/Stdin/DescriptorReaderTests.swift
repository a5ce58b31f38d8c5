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

    /// What is already there when a read returns less than a chunk is read into the same chunk (a pipe gave 64 KiB
    /// a read, too few lines to decode on both cores), up to a full chunk, while the reads are large. A socket of
    /// messages gives one message a read, so the reads are known; everything is written before the first read
    /// starts the reading thread.
    @Test func aChunkTakesWhatIsThereUpToItsSize() async throws {
        let (reader, writer) = try Self.messageReader(chunkBytes: 4096)
        for (byte, count) in [("a", 1000), ("b", 500), ("c", 1000), ("d", 1596), ("e", 300), ("f", 10), ("g", 300)] {
            try Self.send(writer, byte, count)
        }
        close(writer)
        #expect(
            await Self.chunk(reader) == Self.bytes("a", 1000) + Self.bytes("b", 500) + Self.bytes("c", 1000)
                + Self.bytes("d", 1596))
        // A small read (under a sixteenth of a chunk: a writer that trickles) ends a chunk though more is there.
        #expect(await Self.chunk(reader) == Self.bytes("e", 300) + Self.bytes("f", 10))
        // The end, met while filling a chunk, ends the input after it without another read.
        #expect(await Self.chunk(reader) == Self.bytes("g", 300))
        await Self.expectEnd(reader)
    }

    /// With the writer still open, a chunk goes as soon as nothing more is there: no read waits for more.
    @Test func aChunkWaitsForNothingMore() async throws {
        let (reader, writer) = try Self.messageReader(chunkBytes: 4096)
        try Self.send(writer, "a", 10)
        #expect(await Self.chunk(reader) == Self.bytes("a", 10))
        try Self.send(writer, "b", 20)
        #expect(await Self.chunk(reader) == Self.bytes("b", 20))
        close(writer)
        await Self.expectEnd(reader)
    }

    /// A reader of one end of a socket pair of messages, and the other end to write to.
    static func messageReader(chunkBytes: Int) throws -> (DescriptorReader, Int32) {
        var ends: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &ends) == 0)
        return (DescriptorReader(fileDescriptor: ends[0], chunkBytes: chunkBytes), ends[1])
    }

    static func bytes(_ byte: String, _ count: Int) -> [UInt8] { Array(repeating: byte.utf8.first!, count: count) }

    static func send(_ writer: Int32, _ byte: String, _ count: Int) throws {
        let message = bytes(byte, count)
        try #require(message.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) } == count)
    }

    static func chunk(_ reader: DescriptorReader) async -> [UInt8]? {
        guard case .data(let chunk, let count) = await reader.read() else { return nil }
        return Array(chunk.prefix(count))
    }

    /// Expects the end of input within a few chunks, and reads to it whatever came before, so that the reading
    /// thread is done before the reader goes.
    static func expectEnd(_ reader: DescriptorReader) async {
        var extra = 0
        for _ in 0..<8 {
            guard case .data = await reader.read() else { break }
            extra += 1
        }
        #expect(extra == 0, "chunks before the end")
    }

    /// A pipe read by the reader holds up to a chunk, as the kernel reports it (`F_GETPIPE_SZ`), where it held 64
    /// KiB, so that a writer can get a chunk ahead; a descriptor that is not a pipe is left alone.
    @Test func aPipeIsWidenedToAChunk() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { for end in ends { close(end) } }
        // F_GETPIPE_SZ (F_LINUX_SPECIFIC_BASE + 8), which Swift's Glibc module does not export.
        let getPipeSize: Int32 = 1024 + 8
        #expect(fcntl(ends[0], getPipeSize) == 64 * 1024)
        _ = DescriptorReader(fileDescriptor: ends[0], chunkBytes: 256 * 1024)
        #expect(fcntl(ends[0], getPipeSize) == 256 * 1024)
        #expect(fcntl(ends[1], getPipeSize) == 256 * 1024)
    }
}
