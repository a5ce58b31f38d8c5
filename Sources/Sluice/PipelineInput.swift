internal import SluiceCore

/// What feeds a `host` source: any `AsyncSequence` of events, or of batches of events.
///
/// An `AsyncStream` delivers each element with a lock and, when the consumer waits, a task resumption: about half
/// a million elements a second on this project's machines (README, "Performance"). A sequence of batches pays that
/// once per batch, which is how a host that produces many events keeps up with the pipeline. Either way the
/// pipeline takes the next element only when its buffers have room, so a `block` buffer downstream holds the
/// host's sequence back (an `AsyncStream` then buffers as its own policy says).
public struct PipelineInput: Sendable {
    let feed: @Sendable (SourceContext) async throws -> Void

    /// Feeds the events of `sequence`, one by one; buffers downstream gather them into batches.
    public static func events<Events: AsyncSequence & Sendable>(_ sequence: Events) -> PipelineInput
    where Events.Element == Event {
        PipelineInput { context in
            for try await event in sequence {
                var stamped = event
                stamped.ingestNanos = MonotonicClock.nanos()
                context.metrics.recordReceived(1)
                await context.output.send([stamped])
            }
        }
    }

    /// Feeds the batches of `sequence` as they are: the fast way in.
    public static func batches<Batches: AsyncSequence & Sendable>(_ sequence: Batches) -> PipelineInput
    where Batches.Element == [Event] {
        PipelineInput { context in
            for try await batch in sequence {
                let now = MonotonicClock.nanos()
                var stamped = batch
                for index in stamped.indices { stamped[index].ingestNanos = now }
                context.metrics.recordReceived(stamped.count)
                await context.output.send(stamped)
            }
        }
    }
}
