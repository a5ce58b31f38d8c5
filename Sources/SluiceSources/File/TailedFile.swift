internal import SluiceCore

#if canImport(Glibc)
    internal import Glibc
#endif

/// One open file the `file` source follows, by descriptor: a rename does not change what it reads, and a deleted
/// file stays readable to its end.
struct TailedFile {
    var path: String
    let identity: FileIdentity
    let descriptor: Int32
    /// `nil` until the first line is complete; nothing is read before.
    var fingerprint: FileFingerprint?
    /// The next byte to read.
    var offset: Int64
    var splitter: LineSplitter
    var decoder: LineDecoder
    /// Since when no path matched leads to this file (renamed out of the globs, or deleted), in epoch
    /// milliseconds; such a file is read to its end and closed once it has stopped growing for a second, as a
    /// writer may still add a few lines before it reopens its log.
    var unmatchedSinceMillis: Int64?
    var matched: Bool { unmatchedSinceMillis == nil }
    var size: Int64 = 0
    var bytesRead: Int64 = 0
    var rotations = 0

    /// Where its finished lines end: what was read, less a partial line and an open multi-line event.
    var safeOffset: Int64 {
        offset - Int64(splitter.pendingBytes) - Int64(decoder.multiline?.heldInputBytes ?? 0)
    }

    /// Reads the first line and names the file by it; false while it is not complete.
    mutating func identify() -> Bool {
        if fingerprint != nil { return true }
        fingerprint = currentFingerprint()
        return fingerprint != nil
    }

    /// The fingerprint of what the file begins with now.
    func currentFingerprint() -> FileFingerprint? {
        var head = [UInt8](repeating: 0, count: FileFingerprint.maxBytes)
        let count = head.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return head.withUnsafeBytes { FileFingerprint(head: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }

    /// Decodes the lines of the next bytes read. The splitter is taken out meanwhile (the decoder and it cannot
    /// both be borrowed from `self` at once; taking it out does not copy its buffer).
    mutating func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> [[Event]] {
        var taken = splitter
        splitter = LineSplitter(maxLineBytes: 0)
        defer { splitter = taken }
        return decoder.decode(input: bytes) { emit in taken.feed(bytes, emit) }
    }

    /// Decodes a last line without a newline and any open multi-line event: the file has ended.
    mutating func decodeEnd() -> [[Event]] {
        var taken = splitter
        splitter = LineSplitter(maxLineBytes: splitter.maxLineBytes)
        return decoder.decode(flush: true) { emit in taken.finish(emit) }
    }

    /// The file's size now, from the descriptor.
    func currentSize() -> Int64? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }
}

/// What tells open files apart: a rename keeps both, a new file under the old name has a new inode.
struct FileIdentity: Hashable {
    let device: UInt64
    let inode: UInt64
}

/// The figures of one followed file, in the source's metrics (`files: {<path>: {...}}`).
struct FileFigures: Sendable {
    var bytesRead: Int64 = 0
    var offset: Int64 = 0
    var size: Int64 = 0
    var rotations = 0

    var json: JSONValue {
        [
            "bytes_read_total": .int(bytesRead), "offset": .int(offset), "size_bytes": .int(size),
            "lag_bytes": .int(max(0, size - offset)), "rotations_total": .int(Int64(rotations)),
        ]
    }
}
