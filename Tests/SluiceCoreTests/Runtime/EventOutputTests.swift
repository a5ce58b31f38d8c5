import SluiceTesting
import Testing

@testable import SluiceCore

/// An edge gives its only consumer the batch itself, and each of several consumers a batch and texts of its own.
struct EventOutputTests {
    static let line = Array(#"{"device":"dev-0001","seq":1}"#.utf8)

    static func output(into consumers: Int) -> (EventOutput, [EventBuffer]) {
        let metrics = ComponentMetrics(id: "in", kind: .source, typeName: "test")
        let buffers = (0..<consumers).map { index in
            EventBuffer(
                policy: .unbounded, producers: 1,
                owner: ComponentMetrics(id: "out\(index)", kind: .sink, typeName: "test"), maxBatch: 1024)
        }
        return (EventOutput(targets: buffers, metrics: metrics), buffers)
    }

    static func storage(_ batch: [Event]) -> UnsafeRawPointer? {
        batch.withUnsafeBufferPointer { $0.baseAddress.map(UnsafeRawPointer.init) }
    }

    @Test func aFanOutGivesEachConsumerABatchAndTextsOfItsOwn() async throws {
        let (output, buffers) = Self.output(into: 3)
        let batch = [Event(canonicalJSON: Self.line), Event(canonicalJSON: Self.line), Event(["parsed": 1])]
        let texts = batch.map { textAddress(of: $0) }
        await output.send(batch)
        output.finish()
        var received: [[Event]] = []
        for buffer in buffers { received.append(try #require(await buffer.next())) }
        #expect(received.allSatisfy { $0 == batch })
        #expect(Set(received.map(Self.storage)).count == 3)
        // The last consumer has the texts that were sent; each other one, copies.
        #expect(received[2].map { textAddress(of: $0) } == texts)
        for index in 0..<2 {
            #expect(received[index][0..<2].allSatisfy { event in !texts.contains(textAddress(of: event)) })
        }
    }

    @Test func theOnlyConsumerGetsTheBatchItself() async throws {
        let (output, buffers) = Self.output(into: 1)
        var batch = [Event(canonicalJSON: Self.line)]
        batch.reserveCapacity(8)
        let storage = Self.storage(batch)
        await output.send(batch)
        output.finish()
        let received = try #require(await buffers[0].next())
        #expect(Self.storage(received) == storage)
    }
}
