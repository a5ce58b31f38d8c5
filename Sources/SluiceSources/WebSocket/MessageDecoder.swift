internal import SluiceCore
internal import SluiceWebSocket

/// Turns a batch of WebSocket messages into events, counting messages as received and bad ones as `parse_error`,
/// and sends them on; shared by the `websocket` and `websocket_server` sources.
struct MessageDecoder {
    let decoding: EventDecoding
    /// A top-level JSON array becomes one event per element (each element then counts as one received event, so
    /// received = sent + discarded still holds).
    let splitArrays: Bool
    let sourceID: String
    let log: Logger
    private var errors = RateLimitedReporter()
    private var scanner = CanonicalJSONScanner()

    init(decoding: EventDecoding, splitArrays: Bool, sourceID: String, log: Logger) {
        self.decoding = decoding
        self.splitArrays = splitArrays
        self.sourceID = sourceID
        self.log = log
    }

    mutating func deliver(_ messages: [WebSocketMessage], to context: SourceContext) async {
        let now = MonotonicClock.nanos()
        var batch: [Event] = []
        batch.reserveCapacity(messages.count)
        var received = 0
        var discards = DiscardCounts()
        var spare = SpareTexts()
        /// Counts what was taken in so far (before it can be counted as sent) and sends it.
        func send() async {
            context.metrics.recordReceived(received)
            context.metrics.recordDiscarded(discards)
            (received, discards) = (0, DiscardCounts())
            // Handed over as the only reference, so that a consumer changing it in place does not copy it.
            let full = batch
            batch = []
            await context.output.send(full)
        }
        for message in messages {
            let event: Event
            do {
                event = try message.bytes.withUnsafeBufferPointer { (bytes) throws(JSONError) in
                    try decoding.decodeEvent(bytes, scanner: &scanner, ingestNanos: now, reusing: &spare)
                }
            } catch {
                received += 1
                discards[.parseError] += 1
                errors.report(to: log, now: now) { [sourceID] in
                    "\(sourceID): a message is not valid JSON (\(error)); counted under parse_error"
                } summary: { [sourceID] in
                    "\(sourceID): \($0) more messages were not valid JSON; see parse_error in the metrics"
                }
                continue
            }
            if splitArrays, message.bytes.first == UInt8(ascii: "[") || !event.isText,
                case .array(let items) = event.value
            {
                // A large array goes on a batch at a time as its events are made: made at once, the events of one
                // 4 MB message of two million numbers took 330 MB (and of one of the 16 MiB allowed, four times
                // that).
                for start in stride(from: 0, to: items.count, by: EventBuffer.batchEvents) {
                    let end = min(items.count, start + EventBuffer.batchEvents)
                    received += end - start
                    batch.append(contentsOf: items[start..<end].lazy.map { Event($0, ingestNanos: now) })
                    if batch.count >= EventBuffer.batchEvents { await send() }
                }
            } else {
                received += 1
                batch.append(event)
            }
        }
        spare.finish()
        await send()
    }

    /// Counts a message that went over the size limit: received, and discarded under `oversize`.
    func countOversize(in context: SourceContext) {
        context.metrics.recordReceived(1)
        context.metrics.recordDiscarded(1, cause: .oversize)
    }
}
