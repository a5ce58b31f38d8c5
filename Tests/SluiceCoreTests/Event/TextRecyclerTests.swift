import SluiceCore
import Testing

/// Text buffers handed back by the last holder of their events are filled again by a decoder, never while
/// something else holds them, and the pool stays within its bounds.
struct TextRecyclerTests {
    static let first = Array(#"{"device":"dev-0001","seq":1,"temperature":21.5}"#.utf8)
    static let second = Array(#"{"device":"dev-0002","seq":7,"temperature":19}"#.utf8)

    static func decode(_ line: [UInt8], reusing spare: inout [[UInt8]]) throws -> Event {
        var scanner = CanonicalJSONScanner()
        return try line.withUnsafeBufferPointer {
            try EventDecoding.json.decodeEvent($0, scanner: &scanner, ingestNanos: 5, reusing: &spare)
        }
    }

    static func address(_ event: Event) -> UnsafeRawPointer? {
        event.withText { text, _, _ in text.baseAddress.map(UnsafeRawPointer.init) }
    }

    @Test func aBufferGivenBackHoldsTheNextEventWithoutANewAllocation() throws {
        let recycler = TextRecycler()
        var none: [[UInt8]] = []
        var batch = [try Self.decode(Self.first, reusing: &none)]
        let firstAddress = try #require(Self.address(batch[0]))
        recycler.recycle(&batch)
        #expect(batch.isEmpty)
        #expect(recycler.count == 1)
        var spare = recycler.take(upTo: 10)
        #expect(spare.count == 1)
        #expect(recycler.count == 0)
        let reused = try Self.decode(Self.second, reusing: &spare)
        #expect(spare.isEmpty)
        #expect(Self.address(reused) == firstAddress)
        // The same event as one decoded into a buffer of its own.
        let fresh = try Self.decode(Self.second, reusing: &none)
        #expect(reused.jsonText == String(decoding: Self.second, as: UTF8.self))
        #expect(reused == fresh)
    }

    @Test func aBufferSomethingElseStillHoldsIsNeverOverwritten() throws {
        let recycler = TextRecycler()
        var none: [[UInt8]] = []
        let event = try Self.decode(Self.first, reusing: &none)
        // Another holder, as a fan-out's other branch or a tap would be.
        let otherBranch = event
        var batch = [event]
        recycler.recycle(&batch)
        var spare = recycler.take(upTo: 1)
        #expect(spare.count == 1)
        let next = try Self.decode(Self.second, reusing: &spare)
        #expect(otherBranch.jsonText == String(decoding: Self.first, as: UTF8.self))
        #expect(next.jsonText == String(decoding: Self.second, as: UTF8.self))
        #expect(Self.address(next) != Self.address(otherBranch))
    }

    @Test func thePoolKeepsAtMostItsLimitAndNoLargeOrParsedEvents() throws {
        let recycler = TextRecycler(maxBuffers: 4, maxBufferBytes: 256)
        var none: [[UInt8]] = []
        var batch = try (0..<10).map { _ in try Self.decode(Self.first, reusing: &none) }
        recycler.recycle(&batch)
        #expect(recycler.count == 4)
        // Full: what comes back is freed.
        var more = [try Self.decode(Self.second, reusing: &none)]
        recycler.recycle(&more)
        #expect(recycler.count == 4)
        var taken = recycler.take(upTo: 3)
        #expect(taken.count == 3)
        #expect(recycler.count == 1)
        // A long line's buffer and a parsed event's (which has none) are not kept.
        let long = Array("{\"message\":\"\(String(repeating: "x", count: 400))\"}".utf8)
        var large = [try Self.decode(long, reusing: &none), Event(.int(1))]
        recycler.recycle(&large)
        #expect(recycler.count == 1)
        recycler.giveBack(&taken)
        #expect(recycler.count == 4)
    }
}
