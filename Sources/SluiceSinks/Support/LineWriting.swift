internal import SluiceCore

/// The loop shared by sinks that write lines to a descriptor: encode each batch into one buffer, and write it
/// when it passes 64 KiB, when the input has gone idle, or when 100 ms have passed since the last write, so that
/// bulk runs make few system calls and a slow live feed is never held back.
struct LineWriting {
    let format: LineFormat
    let writer: OutputWriter

    private static let flushBytes = 1 << 16
    private static let flushIntervalNanos: UInt64 = 100_000_000

    /// Writes everything `input` delivers; events are counted as sent only once their bytes are written.
    func run(_ input: EventBuffer, _ context: SinkContext) async throws {
        let metrics = context.metrics
        var errors = EvaluationErrorLog(componentID: context.id, log: context.log)
        var encoder = format.encoder()
        var pending = Self.emptyBuffer()
        var ingestTimes: [UInt64] = []
        // The earliest of `ingestTimes`, kept as they are added rather than searched for at every batch.
        var oldestPending = UInt64.max
        var lastWrite = MonotonicClock.nanos()
        while true {
            // Unwritten lines stay held (for sources that keep positions) until their bytes are written.
            context.held.set(oldestPending)
            guard var batch = await input.next() else { break }
            var failed = 0
            batch.forEachInPlace { event in
                do throws(EvaluationError) {
                    try encoder.append(event, to: &pending)
                    ingestTimes.append(event.ingestNanos)
                    oldestPending = min(oldestPending, event.ingestNanos)
                } catch {
                    failed += 1
                    errors.report(error, in: "template")
                }
            }
            if failed > 0 { metrics.recordDiscarded(failed, cause: .error) }
            TextRecycler.shared.recycle(&batch)
            let now = MonotonicClock.nanos()
            if pending.count >= Self.flushBytes || input.isEmpty || now &- lastWrite >= Self.flushIntervalNanos {
                try await write(&pending, &ingestTimes, metrics)
                oldestPending = .max
                lastWrite = now
            }
        }
        try await write(&pending, &ingestTimes, metrics)
        context.held.clear()
    }

    private func write(_ pending: inout [UInt8], _ ingestTimes: inout [UInt64], _ metrics: ComponentMetrics)
        async throws
    {
        guard !ingestTimes.isEmpty else { return }
        do {
            try await writer.write(pending)
        } catch {
            metrics.recordDiscarded(ingestTimes.count, cause: .error)
            throw error
        }
        metrics.recordWritten(ingestTimes: ingestTimes, at: MonotonicClock.nanos())
        // A fresh buffer: the written one may still be referenced by the writer's queue.
        pending = Self.emptyBuffer()
        ingestTimes.removeAll(keepingCapacity: true)
    }

    private static func emptyBuffer() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(flushBytes + 4096)
        return buffer
    }
}
