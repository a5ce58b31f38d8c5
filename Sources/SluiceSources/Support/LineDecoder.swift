internal import Dispatch
internal import SluiceCore
internal import Synchronization

/// Turns lines into events (joining multi-line events first, with `multiline`), counting events as received and
/// bad lines as discarded, and reporting bad lines on standard error without flooding it.
///
/// Without `multiline`, a large input (a full read of stdin or a file) is decoded on both cores: the splitter's
/// lines are collected first (a `memchr` pass), then cut into parts of a batch's lines (two halves when there are
/// fewer than two batches), which this thread and a Dispatch worker take in turn, each with its own scanner and
/// transforms, and the parts are joined in order. Decoding (the canonical-text scan and the copy of each line) is
/// most of a source's work, and one source on one core was the bottleneck of the stdin pipelines. Parts rather
/// than halves: a worker late to its half (a woken core starts 20 to 50 µs later here) left this thread idle at
/// the join; now it takes the parts the worker has not reached. The hand-off still costs once per read.
struct LineDecoder {
    let decoding: EventDecoding
    let sourceID: String
    let log: Logger
    private(set) var multiline: MultilineAssembler?
    private var received = 0
    private var discards = DiscardCounts()
    private var reporter = RateLimitedReporter()
    /// One scanner for each thread of an input decoded in parallel; the first also serves the sequential paths. They
    /// had been neighbours in an array: where it fell in memory decided whether they shared a cache line, and where
    /// they did the same pass-through took 20 % more CPU (stdin -> blackhole 0.22 or 0.27 s for 1,000,000 events,
    /// by whether the file had a `metrics` section, which changed what the allocator had handed out before).
    private let scanners: Separated<CanonicalJSONScanner>
    /// The lines of the input being decoded, collected before decoding them (the storage is kept).
    private var collected: [CollectedLine] = []
    /// The bytes of lines that are not in the input (the splitter joined them from two reads, and lends them only
    /// during its callback).
    private var copied: [UInt8] = []
    /// An instance of the source's fused transforms for each thread (``SourceChain``), made from the chain last given.
    private var runners: [SourceChain.Runner] = []

    /// Fewer lines than this are decoded on this thread alone: handing half to another thread costs about as much
    /// as decoding a few dozen lines.
    static let parallelLines = 512
    /// The most parts a read is cut into.
    static let maxParts = 16

    /// A decoder of its own, or, with `scanners` (``makeScanners()``), sharing them with other decoders that decode
    /// on the same task one at a time: the file source's, one per file, which would otherwise each hold two.
    init(
        decoding: EventDecoding, multiline: MultilineConfig? = nil, sourceID: String, log: Logger,
        scanners: Separated<CanonicalJSONScanner>? = nil
    ) {
        self.scanners = scanners ?? Self.makeScanners()
        self.decoding = decoding
        self.multiline = multiline.map(MultilineAssembler.init)
        self.sourceID = sourceID
        self.log = log
    }

    /// A scanner for each of the two threads a large input is decoded on.
    static func makeScanners() -> Separated<CanonicalJSONScanner> {
        Separated([CanonicalJSONScanner(), CanonicalJSONScanner()])
    }

    /// Runs `split`, which calls back with each line, and returns the events decoded from them in batches of at
    /// most `batchLimit` (a source's batch by default; built whole, so none is copied to be cut up later). `input` is what `split` reads: its
    /// lines need not be copied before they are decoded. With `flush`, a multi-line event still open afterwards is
    /// emitted too (its timeout passed, or the input ended). With `chain`, the source's fused transforms run on
    /// every batch before it is returned, each half's on the thread that decoded it (send them with
    /// ``EventOutput/send(processed:)``).
    mutating func decode(
        batchLimit: Int = EventBuffer.batchEvents, flush: Bool = false, input: UnsafeBufferPointer<UInt8>? = nil,
        chain: SourceChain? = nil, _ split: ((LineSplitter.Piece) -> Void) -> Void
    ) -> [[Event]] {
        let now = MonotonicClock.nanos()
        if let chain, runners.first?.chain !== chain { runners = [chain.makeRunner(), chain.makeRunner()] }
        if chain == nil { runners = [] }
        guard multiline == nil else {
            var batches = decodeJoiningLines(batchLimit: batchLimit, flush: flush, now: now, split)
            if !runners.isEmpty { for index in batches.indices { runners[0].run(&batches[index]) } }
            return batches
        }
        collect(input: input, split)
        defer {
            collected.removeAll(keepingCapacity: true)
            copied.removeAll(keepingCapacity: copied.capacity <= 1 << 20)
        }
        received += collected.count
        let parts = decodeCollected(
            inParallel: collected.count >= Self.parallelLines, batchLimit: batchLimit, now: now)
        var batches: [[Event]] = []
        for part in parts {
            for line in part.rejected { report(line, now: now) }
            // A part's last batch may be short (the read's last, or a half's); the next part's batches follow it.
            for batch in part.batches where !batch.isEmpty { batches.append(batch) }
        }
        return batches
    }

    /// Gathers the lines `split` calls back with, copying those that are not in `input`.
    private mutating func collect(input: UnsafeBufferPointer<UInt8>?, _ split: ((LineSplitter.Piece) -> Void) -> Void) {
        let inputRange = input.flatMap { input in input.baseAddress.map { $0..<($0 + input.count) } }
        split { piece in
            switch piece {
            case .line(let bytes, let number):
                if let start = bytes.baseAddress, let inputRange, inputRange.contains(start),
                    start + bytes.count <= inputRange.upperBound
                {
                    collected.append(.inInput(bytes, number: number))
                } else {
                    let start = copied.count
                    copied.append(contentsOf: bytes)
                    collected.append(.copied(start..<copied.count, number: number))
                }
            case .oversize(let number): collected.append(.oversize(number: number))
            }
        }
    }

    /// Decodes the collected lines: all on this thread, or in parts that this thread and a Dispatch worker take in
    /// turn, each thread with its own scanner.
    private mutating func decodeCollected(inParallel: Bool, batchLimit: Int, now: UInt64) -> [DecodedLines] {
        let lineCount = collected.count
        // A batch's lines a part (a multiple of them past `maxParts` batches), or halves when there are fewer than
        // two batches: every batch but each part's last is full.
        let partLines: Int
        if !inParallel || lineCount == 0 {
            partLines = max(1, lineCount)
        } else if lineCount / 2 < batchLimit {
            partLines = (lineCount + 1) / 2
        } else {
            // No overflow: `batchLimit` is at most half of `lineCount` here.
            let batches = (lineCount + batchLimit - 1) / batchLimit
            partLines = (batches + Self.maxParts - 1) / Self.maxParts * batchLimit
        }
        var parts = [DecodedLines](repeating: DecodedLines(), count: (max(1, lineCount) + partLines - 1) / partLines)
        let decoding = decoding
        collected.withUnsafeBufferPointer { lines in
            copied.withUnsafeBufferPointer { copied in
                parts.withUnsafeMutableBufferPointer { parts in
                    runners.withUnsafeMutableBufferPointer { runners in
                        let work = ParallelParts(
                            lines: lines, copied: copied, scanners: scanners, parts: parts, runners: runners,
                            partLines: partLines)
                        let next = Atomic(0)
                        if inParallel, parts.count > 1 {
                            DispatchQueue.concurrentPerform(iterations: 2) { thread in
                                work.decode(
                                    on: thread, next: next, decoding: decoding, batchLimit: batchLimit, now: now)
                            }
                        } else {
                            work.decode(on: 0, next: next, decoding: decoding, batchLimit: batchLimit, now: now)
                        }
                    }
                }
            }
        }
        return parts
    }

    /// Counts and reports a line that gave no event.
    private mutating func report(_ line: DecodedLines.Rejected, now: UInt64) {
        let sourceID = sourceID
        switch line {
        case .invalid(let number, let reason):
            discards[.parseError] += 1
            reporter.report(to: log, now: now) {
                "\(sourceID): line \(number) is not valid JSON (\(reason)); counted under parse_error"
            } summary: {
                "\(sourceID): \($0) more lines were not valid JSON; see parse_error in the metrics"
            }
        case .oversize(let number):
            discards[.oversize] += 1
            reporter.report(to: log, now: now) {
                "\(sourceID): line \(number) is longer than max_line_bytes; skipped and counted under oversize"
            } summary: {
                "\(sourceID): \($0) more lines were skipped; see the metrics"
            }
        }
    }

    /// The way with `multiline`: lines are joined into events in order, then each event decoded, on this thread.
    private mutating func decodeJoiningLines(
        batchLimit: Int, flush: Bool, now: UInt64, _ split: ((LineSplitter.Piece) -> Void) -> Void
    ) -> [[Event]] {
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
                events.append(try decoding.decodeEvent(bytes, scanner: &scanners[0].pointee, ingestNanos: now))
            } catch {
                report(.invalid(number: number, reason: DecodedLines.reason(error, bytes)), now: now)
            }
        }
        // Taken out for the pass, so that decoding (which counts and reports through `self`) can run inside it.
        var assembler = multiline!
        multiline = nil
        defer { multiline = assembler }
        var lastLine = 0
        split { piece in
            switch piece {
            case .line(let bytes, let number):
                lastLine = number
                assembler.feed(bytes, now: now) { decodeEvent($0, number: number) }
            case .oversize(let number):
                received += 1
                report(.oversize(number: number), now: now)
            }
        }
        if flush { assembler.flush { decodeEvent($0, number: lastLine) } }
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

/// A line gathered before decoding: its bytes in the input being decoded, or in the decoder's copy of lines that
/// are not, or the fact that it was too long.
private enum CollectedLine {
    case inInput(UnsafeBufferPointer<UInt8>, number: Int)
    case copied(Range<Int>, number: Int)
    case oversize(number: Int)
}

/// What decoding a run of lines gave: its events in batches, and the lines that gave none, in order.
private struct DecodedLines {
    enum Rejected {
        case invalid(number: Int, reason: String)
        case oversize(number: Int)
    }

    var batches: [[Event]] = []
    var rejected: [Rejected] = []

    init() {}

    init(
        _ lines: UnsafeBufferPointer<CollectedLine>, copied: UnsafeBufferPointer<UInt8>, decoding: EventDecoding,
        scanner: inout CanonicalJSONScanner, batchLimit: Int, now: UInt64
    ) {
        var events: [Event] = []
        events.reserveCapacity(min(batchLimit, lines.count))
        var spare = SpareTexts()
        func decode(_ bytes: UnsafeBufferPointer<UInt8>, number: Int) {
            do {
                events.append(try decoding.decodeEvent(bytes, scanner: &scanner, ingestNanos: now, reusing: &spare))
            } catch {
                rejected.append(.invalid(number: number, reason: Self.reason(error, bytes)))
            }
        }
        for line in lines {
            if events.count == batchLimit {
                batches.append(events)
                events = []
                events.reserveCapacity(batchLimit)
            }
            switch line {
            case .inInput(let bytes, let number): decode(bytes, number: number)
            case .copied(let range, let number): decode(UnsafeBufferPointer(rebasing: copied[range]), number: number)
            case .oversize(let number): rejected.append(.oversize(number: number))
            }
        }
        spare.finish()
        batches.append(events)
    }

    /// Why a line is not valid JSON, as the message says it.
    static func reason(_ error: JSONError, _ bytes: UnsafeBufferPointer<UInt8>) -> String {
        bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D } ? "an empty line" : "\(error)"
    }
}

/// The collected lines in parts of `partLines`, which the threads decoding them take in turn.
private struct ParallelParts: @unchecked Sendable {
    // @unchecked: the buffers outlive `concurrentPerform`, which returns only when both threads are done; the lines
    // and copied bytes are only read, thread `n` alone uses `scanners[n]` and `runners[n]`, and part `n` is written
    // only by the thread that took its number from the shared count.
    let lines: UnsafeBufferPointer<CollectedLine>
    let copied: UnsafeBufferPointer<UInt8>
    let scanners: Separated<CanonicalJSONScanner>
    let parts: UnsafeMutableBufferPointer<DecodedLines>
    /// The source's fused transforms, an instance per thread; empty when it has none.
    let runners: UnsafeMutableBufferPointer<SourceChain.Runner>
    let partLines: Int

    /// Decodes parts on thread `thread` (0 or 1), taking the next part's number from `next` until none is left.
    func decode(on thread: Int, next: borrowing Atomic<Int>, decoding: EventDecoding, batchLimit: Int, now: UInt64) {
        while true {
            let part = next.wrappingAdd(1, ordering: .relaxed).oldValue
            guard part < parts.count else { return }
            let range = part * partLines..<min(lines.count, (part + 1) * partLines)
            parts[part] = DecodedLines(
                UnsafeBufferPointer(rebasing: lines[range]), copied: copied, decoding: decoding,
                scanner: &scanners[thread].pointee, batchLimit: batchLimit, now: now)
            // Here, while the events' text is in this core's cache.
            guard !runners.isEmpty else { continue }
            for index in parts[part].batches.indices { runners[thread].run(&parts[part].batches[index]) }
        }
    }
}
