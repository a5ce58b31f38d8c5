#if canImport(Glibc)
    internal import Glibc
#endif

/// Splits a byte stream arriving in chunks into lines, without copying lines that lie inside one chunk.
///
/// A line longer than `maxLineBytes` is reported once as oversize and skipped up to its newline, never split
/// into two lines. The last line needs no newline. A UTF-8 byte-order mark at the very start of the stream is
/// skipped, as Windows tools write one; anywhere else it is content.
public struct LineSplitter: Sendable {
    /// One line, or the fact that an oversize line was skipped.
    public enum Piece {
        /// A line without its newline; the buffer is valid only during the callback.
        case line(UnsafeBufferPointer<UInt8>, number: Int)
        /// A line over the limit, skipped whole.
        case oversize(number: Int)
    }

    /// The longest line accepted, in bytes, without the newline; a change applies from the next line completed.
    public var maxLineBytes: Int
    private var carry: [UInt8] = []
    private var skipping = false
    private var lineNumber = 0

    /// Bytes of a line begun but not yet complete.
    public var pendingBytes: Int { carry.count }

    public init(maxLineBytes: Int) {
        self.maxLineBytes = maxLineBytes
    }

    /// Feeds the next chunk, calling `body` for every line it completes.
    public mutating func feed(_ chunk: UnsafeBufferPointer<UInt8>, _ body: (Piece) -> Void) {
        guard let base = chunk.baseAddress, !chunk.isEmpty else { return }
        var start = 0
        while start < chunk.count {
            guard let found = memchr(base + start, 0x0A, chunk.count - start) else { break }
            let newline = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            let piece = UnsafeBufferPointer(start: base + start, count: newline - start)
            lineNumber += 1
            if skipping {
                skipping = false
            } else if !carry.isEmpty {
                if carry.count + piece.count > maxLineBytes {
                    body(.oversize(number: lineNumber))
                } else {
                    carry.append(contentsOf: piece)
                    carry.withUnsafeBufferPointer { body(line($0)) }
                }
                carry.removeAll(keepingCapacity: carry.capacity <= 1 << 20)
            } else if piece.count > maxLineBytes {
                body(.oversize(number: lineNumber))
            } else {
                body(line(piece))
            }
            start = newline + 1
        }
        guard start < chunk.count, !skipping else { return }
        let rest = UnsafeBufferPointer(rebasing: chunk[start...])
        if carry.count + rest.count > maxLineBytes {
            // Report it now and drop what we have, so memory stays bounded by the limit.
            body(.oversize(number: lineNumber + 1))
            carry.removeAll()
            skipping = true
        } else {
            carry.append(contentsOf: rest)
        }
    }

    /// Ends the input: a last line without a newline is delivered; a skipped one was already reported.
    public mutating func finish(_ body: (Piece) -> Void) {
        if skipping {
            // The oversize line ran to the end of input; it was counted when it crossed the limit.
            lineNumber += 1
            skipping = false
            return
        }
        guard !carry.isEmpty else { return }
        lineNumber += 1
        carry.withUnsafeBufferPointer { body(line($0)) }
        carry.removeAll()
    }

    /// The piece for a complete line, without the stream's byte-order mark on the first one.
    private func line(_ bytes: UnsafeBufferPointer<UInt8>) -> Piece {
        if lineNumber == 1, bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
            return .line(UnsafeBufferPointer(rebasing: bytes[3...]), number: 1)
        }
        return .line(bytes, number: lineNumber)
    }
}
