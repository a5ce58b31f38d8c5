internal import SluiceCore

/// Takes every batch and counts it as written, with its latency.
struct BlackholeSink: Sink {
    func run(_ input: EventBuffer, _ context: SinkContext) async throws {
        while var batch = await input.next() {
            context.metrics.recordWritten(batch, at: MonotonicClock.nanos())
            TextRecycler.shared.recycle(&batch)
        }
    }
}
