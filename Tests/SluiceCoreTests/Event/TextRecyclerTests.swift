import SluiceCore
import SluiceTesting
import Testing

/// Text buffers handed back by the last holder of their events are filled again by a decoder, never while
/// something else holds them, and the pool stays within its bounds.
struct TextRecyclerTests {
    static let first = Array(#"{"device":"dev-0001","seq":1,"temperature":21.5}"#.utf8)
    static let second = Array(#"{"device":"dev-0002","seq":7,"temperature":19}"#.utf8)

    static func decode(_ line: [UInt8], reusing spare: inout SpareTexts) throws -> Event {
        var scanner = CanonicalJSONScanner()
        return try line.withUnsafeBufferPointer {
            try EventDecoding.json.decodeEvent($0, scanner: &scanner, ingestNanos: 5, reusing: &spare)
        }
    }

    static func decode(_ line: [UInt8]) throws -> Event {
        var none = SpareTexts(nil)
        return try decode(line, reusing: &none)
    }

    @Test func aBufferGivenBackHoldsTheNextEventWithoutANewAllocation() throws {
        let recycler = TextRecycler()
        var batch = [try Self.decode(Self.first)]
        let firstAddress = try #require(textAddress(of: batch[0]))
        recycler.recycle(&batch)
        #expect(batch.isEmpty)
        #expect(recycler.count == 1)
        var spare = SpareTexts(recycler)
        let reused = try Self.decode(Self.second, reusing: &spare)
        #expect(recycler.count == 0)
        #expect(textAddress(of: reused) == firstAddress)
        // The same event as one decoded into a buffer of its own; with the pool empty, the next one is new.
        #expect(reused.jsonText == String(decoding: Self.second, as: UTF8.self))
        #expect(reused == (try Self.decode(Self.second)))
        let next = try Self.decode(Self.first, reusing: &spare)
        #expect(textAddress(of: next) != firstAddress)
    }

    @Test func aBufferSomethingElseStillHoldsIsNeverOverwritten() throws {
        let recycler = TextRecycler()
        let event = try Self.decode(Self.first)
        // Another holder, as a fan-out's other branch or a tap would be.
        let otherBranch = event
        var batch = [event]
        recycler.recycle(&batch)
        var spare = SpareTexts(recycler)
        let next = try Self.decode(Self.second, reusing: &spare)
        #expect(recycler.count == 0)
        #expect(otherBranch.jsonText == String(decoding: Self.first, as: UTF8.self))
        #expect(next.jsonText == String(decoding: Self.second, as: UTF8.self))
        #expect(textAddress(of: next) != textAddress(of: otherBranch))
    }

    @Test func thePoolKeepsAtMostItsLimitAndNoLargeOrParsedEvents() throws {
        let recycler = TextRecycler(maxBuffers: 10, maxBufferBytes: 256)
        for _ in 0..<3 {
            var batch = try (0..<5).map { _ in try Self.decode(Self.first) }
            recycler.recycle(&batch)
        }
        // The third batch found the pool full and was freed.
        #expect(recycler.count == 10)
        // A long line's buffer and a parsed event's (which has none) are not kept.
        let long = Array("{\"message\":\"\(String(repeating: "x", count: 400))\"}".utf8)
        var large = [try Self.decode(long), Event(.int(1))]
        recycler.recycle(&large)
        #expect(recycler.count == 10)
        // A supply takes a batch at a time and gives back what it did not use.
        var spare = SpareTexts(recycler)
        _ = try Self.decode(Self.second, reusing: &spare)
        #expect(recycler.count == 5)
        spare.finish()
        #expect(recycler.count == 9)
        // One more fits; a batch of two does not, and is freed whole.
        var two = try (0..<2).map { _ in try Self.decode(Self.first) }
        recycler.recycle(&two)
        #expect(recycler.count == 9)
        var one = [try Self.decode(Self.first)]
        recycler.recycle(&one)
        #expect(recycler.count == 10)
    }

    /// The limit counts buffers, not batches: many small batches (a route's outputs, each part of a batch) are kept
    /// as far as a few large ones.
    @Test func smallBatchesFillThePoolAsFarAsLargeOnes() throws {
        let recycler = TextRecycler(maxBuffers: 10, maxBufferBytes: 256)
        for _ in 0..<12 {
            var batch = [try Self.decode(Self.first)]
            recycler.recycle(&batch)
        }
        #expect(recycler.count == 10)
        var spare = SpareTexts(recycler)
        _ = try Self.decode(Self.second, reusing: &spare)
        #expect(recycler.count == 9, "a batch of one was taken, and used")
    }

    /// A sink's batch comes back in any order (a route's outputs each hold some of a batch's events); its buffers
    /// are filled again lowest address first, every one of them.
    @Test func aSinksBuffersAreFilledAgainInAddressOrder() throws {
        let recycler = TextRecycler()
        var generator = SplitMix64(seed: 11)
        var batch = try (0..<300).map { _ in try Self.decode(Self.first) }.shuffled(using: &generator)
        let given = batch.compactMap { textAddress(of: $0) }
        #expect(Set(given).count == 300)
        #expect(given != given.sorted(), "the shuffled batch is out of order")
        recycler.recycle(&batch)
        var spare = SpareTexts(recycler)
        let filled = try (0..<300).map { _ in try textAddress(of: Self.decode(Self.second, reusing: &spare)) }
        let inAddressOrder = filled == given.sorted().map(Optional.some)
        #expect(inAddressOrder, "filled lowest address first, each buffer once")
        #expect(recycler.count == 0)
    }

    /// What a stage drops (``retainEvents`` puts it last) gives its buffers back; what it keeps is untouched.
    @Test func theDroppedTailOfABatchGivesItsBuffersBackAndTheKeptEventsStay() throws {
        let recycler = TextRecycler()
        var batch = [try Self.decode(Self.first), try Self.decode(Self.second), try Self.decode(Self.first)]
        let keptAddress = textAddress(of: batch[0])
        let droppedAddress = try #require(textAddress(of: batch[2]))
        recycler.recycle(&batch, from: 1)
        #expect(batch.count == 1)
        #expect(batch[0].jsonText == String(decoding: Self.first, as: UTF8.self))
        #expect(textAddress(of: batch[0]) == keptAddress)
        #expect(recycler.count == 2)
        // Nothing dropped: nothing given back, nothing removed.
        recycler.recycle(&batch, from: 1)
        #expect(batch.count == 1)
        #expect(recycler.count == 2)
        var spare = SpareTexts(recycler)
        let first = try Self.decode(Self.second, reusing: &spare)
        let second = try Self.decode(Self.second, reusing: &spare)
        #expect(Set([textAddress(of: first), textAddress(of: second)]).contains(droppedAddress))
        #expect(first == (try Self.decode(Self.second)))
    }

    @Test func aCopyForAnotherTaskHasATextOfItsOwn() throws {
        let recycler = TextRecycler()
        var given = [try Self.decode(Self.first)]
        let givenAddress = try #require(textAddress(of: given[0]))
        recycler.recycle(&given)
        var spare = SpareTexts(recycler)
        var events = [try Self.decode(Self.first), Event(["parsed": true], ingestNanos: 9)]
        let copies = events.copies(into: &spare)
        spare.finish()
        #expect(copies == events)
        #expect(copies.map(\.jsonText) == events.map(\.jsonText))
        // The text went into the buffer from the pool; the parsed value, which is never written in place, is shared.
        #expect(textAddress(of: copies[0]) == givenAddress)
        #expect(textAddress(of: copies[0]) != textAddress(of: events[0]))
        #expect(!copies[1].isText)
        // The copy reads as the original does, as flat text with the same keys.
        var copy = copies[0]
        try copy.set(try #require(EventPath("added")), to: 1)
        #expect(copy.jsonText == #"{"device":"dev-0001","seq":1,"temperature":21.5,"added":1}"#)
        #expect(events[0].jsonText == String(decoding: Self.first, as: UTF8.self))
    }
}
