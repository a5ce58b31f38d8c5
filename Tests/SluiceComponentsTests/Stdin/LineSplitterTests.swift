import SluiceSources
import Testing

struct LineSplitterTests {
    /// Feeds `chunks` and returns each piece as "text" or "oversize@N".
    func split(_ chunks: [String], max: Int = 100) -> [String] {
        var splitter = LineSplitter(maxLineBytes: max)
        var pieces: [String] = []
        func collect(_ piece: LineSplitter.Piece) {
            switch piece {
            case .line(let bytes, let number): pieces.append("\(number):" + String(decoding: bytes, as: UTF8.self))
            case .oversize(let number): pieces.append("oversize@\(number)")
            }
        }
        for chunk in chunks {
            Array(chunk.utf8).withUnsafeBufferPointer { splitter.feed($0, collect) }
        }
        splitter.finish(collect)
        return pieces
    }

    @Test func linesAcrossChunksAreJoined() {
        #expect(split(["ab", "c\nde", "f\n", "g"]) == ["1:abc", "2:def", "3:g"])
    }

    @Test func emptyLinesAndCRLFArePreservedForTheDecoder() {
        #expect(split(["a\r\n\n\nb\n"]) == ["1:a\r", "2:", "3:", "4:b"])
    }

    @Test func anOversizeLineIsSkippedWholeAndCountedOnce() {
        let long = String(repeating: "x", count: 30)
        #expect(split(["ok\n" + long + "\nafter\n"], max: 10) == ["1:ok", "oversize@2", "3:after"])
        // Spread over many chunks, it is reported when it crosses the limit, and its tail is not a line.
        #expect(split(["ok\nxxxxxx", "xxxxxx", "xxxxxx", "xx\nafter"], max: 10) == ["1:ok", "oversize@2", "3:after"])
        // Running to the end of input.
        #expect(split(["a\n", String(repeating: "y", count: 50)], max: 10) == ["1:a", "oversize@2"])
    }

    @Test func aLineOfExactlyTheLimitIsKept() {
        #expect(split(["12345\n", "123", "45\n"], max: 5) == ["1:12345", "2:12345"])
    }

    @Test func aByteOrderMarkIsSkippedOnlyAtTheStartOfTheStream() {
        let bom = "\u{FEFF}"
        #expect(split([bom + "a\n" + bom + "b\n"]) == ["1:a", "2:" + bom + "b"])
        // In a read of its own, on a first line without a newline.
        #expect(split([bom, "a"]) == ["1:a"])
    }
}
