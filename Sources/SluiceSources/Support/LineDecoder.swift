internal import SluiceCore

/// Turns lines into events (joining multi-line events first, with `multiline`), counting events as received and
/// bad lines as discarded, and reporting bad lines on standard error without flooding it.
struct LineDecoder {
    let decoding: EventDecoding
    let sourceID: String
    let log: Logger
    private(set) var multiline: MultilineAssembler?
    private var received = 0
    private var discards = DiscardCounts()
    private var reporter = RateLimitedReporter()
    private var scanner = CanonicalJSONScanner()

    init(decoding: EventDecoding, multiline: MultilineConfig? = nil, sourceID: String, log: Logger) {
        self.decoding = decoding
        self.multiline = multiline.map(MultilineAssembler.init)
        self.sourceID = sourceID
        self.log = log
    }

    /// Runs `split`, which calls back with each line, and returns the events decoded from them in batches of at
    /// most `batchLimit` (built whole, so none is copied to be cut up later). With `flush`, a multi-line event
    /// still open afterwards is emitted too (its timeout passed, or the input ended).
    mutating func decode(batchLimit: Int, flush: Bool = false, _ split: ((LineSplitter.Piece) -> Void) -> Void)
        -> [[Event]]
    {
        let now = MonotonicClock.nanos()
        var batches: [[Event]] = []
        var events: [Event] = []
        func decodeEvent(_ bytes: UnsafeBufferPointer<UInt8>, number: Int) {
            if events.count == batchLimit {
                batches.append(events)
                events = []
                events.reserveCapacity(batchLimit)
            }
            received += 1
            do {
                events.append(try decoding.decodeEvent(bytes, scanner: &scanner, ingestNanos: now))
            } catch {
                discards[.parseError] += 1
                let reason = bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D } ? "an empty line" : "\(error)"
                reporter.report(to: log, now: now) {
                    "\(sourceID): line \(number) is not valid JSON (\(reason)); counted under parse_error"
                } summary: {
                    "\(sourceID): \($0) more lines were not valid JSON; see parse_error in the metrics"
                }
            }
        }
        var lastLine = 0
        split { piece in
            switch piece {
            case .line(let bytes, let number):
                lastLine = number
                if multiline != nil {
                    multiline!.feed(bytes, now: now) { decodeEvent($0, number: number) }
                } else {
                    decodeEvent(bytes, number: number)
                }
            case .oversize(let number):
                received += 1
                discards[.oversize] += 1
                reporter.report(to: log, now: now) {
                    "\(sourceID): line \(number) is longer than max_line_bytes; skipped and counted under oversize"
                } summary: {
                    "\(sourceID): \($0) more lines were skipped; see the metrics"
                }
            }
        }
        if flush { multiline?.flush { decodeEvent($0, number: lastLine) } }
        batches.append(events)
        return batches
    }

    /// The events counted since the last call.
    mutating func takeReceived() -> Int {
        defer { received = 0 }
        return received
    }

    /// The discards counted since the last call.
    mutating func takeDiscards() -> DiscardCounts {
        defer { discards = DiscardCounts() }
        return discards
    }

    /// Emits a multi-line event still open (its timeout passed, or its file ended) in one batch.
    mutating func flushMultiline() -> [Event] {
        decode(batchLimit: .max, flush: true) { _ in }.first ?? []
    }

    /// Writes the summary of any messages still suppressed.
    mutating func finish() {
        reporter.flush(to: log, force: true) { "\(sourceID): \($0) more bad lines; see the metrics" }
    }
}
