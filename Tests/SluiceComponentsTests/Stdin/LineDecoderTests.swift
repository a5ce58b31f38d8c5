import SluiceCore
import Synchronization
import Testing

@testable import SluiceSources

/// A large read is decoded in parts on two threads (halves when it holds fewer than two batches): the events,
/// counts and messages must be exactly those of decoding it line by line.
struct LineDecoderTests {
    /// Decodes `chunks` (then the end of input) and returns the events' texts, the counts and the messages.
    func decode(_ chunks: [[UInt8]], batchLimit: Int = 1024) -> (
        events: [String], received: Int, discards: DiscardCounts, log: [String], batches: [Int]
    ) {
        let messages = Mutex<[String]>([])
        let log = Logger { line in messages.withLock { $0.append(line) } }
        var decoder = LineDecoder(decoding: .json, sourceID: "in", log: log)
        var splitter = LineSplitter(maxLineBytes: 100)
        var events: [Event] = []
        var sizes: [Int] = []
        for chunk in chunks {
            let batches = chunk.withUnsafeBufferPointer { bytes in
                decoder.decode(batchLimit: batchLimit, input: bytes) { emit in splitter.feed(bytes, emit) }
            }
            #expect(batches.allSatisfy { !$0.isEmpty && $0.count <= batchLimit })
            events += batches.joined()
            sizes += batches.map(\.count)
        }
        events += decoder.decode(batchLimit: batchLimit, flush: true) { emit in splitter.finish(emit) }.joined()
        let received = decoder.takeReceived()
        let discards = decoder.takeDiscards()
        decoder.finish()
        return (events.map(\.jsonText), received, discards, messages.withLock { $0 }, sizes)
    }

    /// Values that the two decoding threads write for every event lie in cache lines no other memory shares
    /// (``Separated``).
    @Test func separatedValuesShareNoCacheLine() {
        let scanners = Separated([CanonicalJSONScanner(), CanonicalJSONScanner()])
        let first = UInt(bitPattern: scanners[0])
        let second = UInt(bitPattern: scanners[1])
        #expect(first % 128 == 0 && second % 128 == 0)
        #expect(second - first >= 128)
        // A value larger than a block (160 bytes) gets as many whole blocks as it needs.
        let words = (UInt64(1), UInt64(2), UInt64(3), UInt64(4))
        let large = Separated([(words, words, words, words, words), (words, words, words, words, (5, 6, 7, 8))])
        #expect(UInt(bitPattern: large[1]) - UInt(bitPattern: large[0]) == 256)
        #expect(large[1].pointee.4.3 == 8 && large[0].pointee.4.3 == 4)
    }

    @Test func halvesDecodedApartComeOutInOrderWithEveryLineCounted() {
        // Bad lines and an oversize one in both halves of the first read, text the scanner leaves to the full parse
        // (a space), and a line split between the two reads.
        var lines = (0..<3000).map { #"{"n":\#($0)}"# }
        for bad in [5, 1700, 2990] { lines[bad] = #"{"n":"# }
        lines[2500] = String(repeating: "x", count: 200)
        for spaced in [8, 2000] { lines[spaced] = #"{"n": \#(spaced)}"# }
        let text = Array((lines.joined(separator: "\n") + "\n").utf8)
        let cut = text.count * 9 / 10 + 3
        let whole = decode([Array(text[..<cut]), Array(text[cut...])])
        // The same lines a few at a time, each read far below the size that is split between threads.
        let pieces = stride(from: 0, to: text.count, by: 997).map { Array(text[$0..<min($0 + 997, text.count)]) }
        let small = decode(pieces)

        let expected = (0..<3000).filter { ![5, 1700, 2990, 2500].contains($0) }.map { #"{"n":\#($0)}"# }
        #expect(whole.events == expected)
        #expect(small.events == expected)
        #expect(whole.received == 3000 && small.received == 3000)
        #expect(whole.discards[.parseError] == 3 && whole.discards[.oversize] == 1)
        #expect(whole.discards == small.discards)
        #expect(whole.log == small.log)
        let named = whole.log.map { $0.contains("line 6 ") || $0.contains("line 1701 ") || $0.contains("line 2501 ") }
        #expect(named.prefix(3) == [true, true, true], "\(whole.log)")
        #expect(whole.log.count == 4)
    }

    /// A read of many batches is cut into parts of whole batches (several a part past 16 parts): every batch is
    /// full but the read's last, and the events come out in order.
    @Test func partsOfWholeBatchesLeaveOnlyTheLastShort() {
        let lines = (0..<3030).map { #"{"n":\#($0)}"# }
        let text = Array((lines.joined(separator: "\n") + "\n").utf8)
        for batchLimit in [50, 100, 1000] {
            let decoded = decode([text], batchLimit: batchLimit)
            #expect(decoded.events == lines)
            #expect(decoded.batches.dropLast().allSatisfy { $0 == batchLimit }, "\(batchLimit): \(decoded.batches)")
            #expect(decoded.batches.last == 3030 % batchLimit)
        }
    }
}
