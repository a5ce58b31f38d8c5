internal import SluiceCore

/// Reads standard input in 1 MiB chunks (read ahead on another thread, see ``DescriptorReader``), splits lines,
/// decodes each into an event, and sends each chunk's events in batches of up to 1,000, built whole so that none
/// is copied to be cut. Larger chunks mean fewer thread hand-offs (64 -> 128 KiB was about 35 % faster; 512 KiB
/// with read-ahead and whole batches another 15-20 %), and, since the decoder shares a chunk out in parts of a
/// batch's lines, more parts to share: 1 MiB (about 5,700 events of 183 bytes, six parts) with the parts took 0.92
/// of the wall time of 512 KiB in halves for stdin -> blackhole and 0.84 for scenario 3 (15 alternating runs),
/// where the parts at 512 KiB (three) gained little; 2 MiB was no faster and held 6 MB more. While a `block`
/// buffer downstream is full, ``EventOutput/send(_:)`` waits and no more is read, so the pipe pushes back on
/// whoever writes to it.
///
/// Standard input is never read again: when a reload gives the source new options, this instance stops reading
/// (what it read ahead is still decoded and sent) and hands its partly read line to the next one, which goes on
/// reading where it stopped, so that no byte is lost or read twice. An open multi-line event is emitted as it
/// stands at the change.
struct StdinSource: Source {
    let config: StdinSourceConfig
    /// The descriptor read: standard input, given by the catalog, which alone knows the process.
    let descriptor: Int32

    private static let chunkBytes = 1 << 20

    func run(_ context: SourceContext) async throws {
        let reader = DescriptorReader(fileDescriptor: descriptor, chunkBytes: Self.chunkBytes)
        context.stop.onStop { reader.wake() }
        var splitter = context.handOver.take(LineSplitter.self) ?? LineSplitter(maxLineBytes: config.maxLineBytes)
        splitter.maxLineBytes = config.maxLineBytes
        var decoder = LineDecoder(
            decoding: config.decoding, multiline: config.multiline, sourceID: context.id, log: context.log)
        let multiline = MultilineCounters()
        if config.multiline != nil { context.metrics.provideDetails { multiline.details } }
        var done = false
        while !done {
            let batches: [[Event]]
            // An open multi-line event is emitted when its timeout passes without another line.
            let read = await reader.read(deadlineNanos: decoder.multiline?.deadlineNanos)
            // The transforms fused into this source run on each half of a read as it is decoded; taken after the
            // wait, which a reload that splits them off may have come during.
            let chain = context.output.chain
            switch read {
            case .data(let chunk, let count):
                batches = chunk.withUnsafeBufferPointer { whole in
                    let bytes = UnsafeBufferPointer(rebasing: whole[..<count])
                    return decoder.decode(input: bytes, chain: chain) { emit in splitter.feed(bytes, emit) }
                }
                reader.recycle(chunk)
            case .idle:
                batches = decoder.decode(flush: true, chain: chain) { _ in }
            case .end:
                // Only at the end of input is a last line without a newline complete.
                batches = decoder.decode(flush: true, chain: chain) { emit in splitter.finish(emit) }
                done = true
            case .stopped:
                // Stopping ends at a line boundary: a partly read line is not an event yet; an open multi-line
                // event is complete as far as it goes.
                batches = decoder.decode(flush: true, chain: chain) { _ in }
                done = true
            case .failed(let message):
                throw StdinError(message: message)
            }
            context.metrics.recordReceived(decoder.takeReceived())
            context.metrics.recordDiscarded(decoder.takeDiscards())
            multiline.update(decoder.multiline)
            if chain != nil {
                await context.output.send(processed: consume batches)
            } else {
                await context.output.send(batches: consume batches)
            }
        }
        decoder.finish()
        if context.handOver.isWanted { context.handOver.leave(splitter) }
    }
}

/// The failure that ends a `stdin` source: reading the descriptor failed.
struct StdinError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
