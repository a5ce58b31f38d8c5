internal import SluiceCore

#if canImport(Dispatch)
    internal import Dispatch
#endif

/// The fleet in parts of consecutive devices, each drawing from its own random stream, so that a large batch is
/// generated on both cores: the simulator's own task is what limits `simulator -> blackhole`.
///
/// Up to sixteen parts rather than two halves: a core that was late to its half (busy with the consumer, or still
/// waking: a woken core starts 20 to 50 µs later here) left the other idle at the join, and each core was idle 19
/// to 31 % of the run (`perf sched`); parts go to whichever core is free. Eight parts: 0.87 of the wall time of two
/// halves, sixteen 0.97 of eight (11 alternating runs each). Readings still go round the devices in order, as from
/// one fleet: reading `p` of a run is from device `p mod devices`. Each part meets its own devices in that same
/// order whatever the batch sizes, and draws only from its own stream, so a seeded run gives the same readings
/// whether a batch was generated on one thread or several.
struct SplitFleet: Sendable {
    /// The parts, in device order, apart in memory: each writes its state (its random stream, its next device) for
    /// every reading. Handed over whole on a reload.
    private let parts: Separated<Fleet>
    /// Where each part's devices start, and the number of devices last.
    private let bounds: [Int]
    /// The device of the next reading.
    private var nextDevice = 0
    private var devices: Int { bounds[bounds.count - 1] }

    /// Batches smaller than this are generated on the calling thread: a hand-off costs a few microseconds.
    static let parallelBatch = 256
    /// The most parts a fleet is cut into.
    static let maxParts = 16

    init(_ config: SimulatorSourceConfig, seed: UInt64) {
        var fleet = Fleet(config, seed: seed)
        let devices = fleet.deviceCount
        let partCount = min(devices, Self.maxParts)
        let bounds = (0...partCount).map { $0 * devices / partCount }
        self.bounds = bounds
        // From the top down: each part splits off the devices above the next boundary.
        var parts: [Fleet] = []
        for part in (1..<partCount).reversed() { parts.append(fleet.splitOff(from: bounds[part])) }
        parts.append(fleet)
        self.parts = Separated(Array(parts.reversed()))
    }

    /// The next `times.count` readings, the `n`th at `times[n]`, each `elapsed` seconds after its device's last, in
    /// batches of `batchSize` (the last one smaller).
    mutating func readings(
        at times: [Int64], elapsed: Double, ingestNanos: UInt64, batchSize: Int = EventBuffer.batchEvents
    ) -> [[Event]] {
        let first = nextDevice
        nextDevice = (nextDevice + times.count) % devices
        let counts = stride(from: 0, to: times.count, by: batchSize).map { min(batchSize, times.count - $0) }
        // Each part writes its readings straight into their places in the batches (the places of its devices):
        // through a scratch buffer, the readings were copied into the batches afterwards, and the buffer (256 KB,
        // allocated for every generation), freed at the top of the heap, left more free memory there than glibc
        // keeps, so that its pages went back to the kernel and were faulted in again, zeroed, for the next: 28,000 to
        // 41,000 page faults in 4 million readings on both cores, and a tenth of the CPU time (2,200 faults now).
        return times.withUnsafeBufferPointer { times in
            Self.makeBatches(counts[...]) { batches in
                let work = FleetParts(
                    parts: parts, bounds: bounds, batches: batches, batchSize: batchSize, times: times,
                    firstDevice: first, elapsed: elapsed, ingestNanos: ingestNanos)
                if parts.count > 1, times.count >= Self.parallelBatch {
                    DispatchQueue.concurrentPerform(iterations: parts.count) { work.generate($0) }
                } else {
                    for part in 0..<parts.count { work.generate(part) }
                }
            }
        }
    }

    /// Arrays of `counts` events, every one of which `fill` initializes, given their storage in order: each array
    /// is made around the making of the next, so that `fill` runs once, inside all of them.
    private static func makeBatches(
        _ counts: ArraySlice<Int>, storage: [UnsafeMutablePointer<Event>] = [],
        fill: ([UnsafeMutablePointer<Event>]) -> Void
    ) -> [[Event]] {
        guard let count = counts.first else {
            fill(storage)
            return []
        }
        var rest: [[Event]] = []
        let batch = [Event](unsafeUninitializedCapacity: count) { buffer, initialized in
            rest = makeBatches(counts.dropFirst(), storage: storage + [buffer.baseAddress!], fill: fill)
            initialized = count
        }
        return [batch] + rest
    }
}

/// One generation's work for every part of a fleet.
private struct FleetParts: @unchecked Sendable {
    // @unchecked: the storage outlives `concurrentPerform`, which returns only when every part is done; `times` and
    // `bounds` are only read, part `n` alone writes `parts[n]`, and the parts initialize disjoint places of the
    // batches (those of their own devices), together every one.
    let parts: Separated<Fleet>
    let bounds: [Int]
    /// Where each batch's events go, `batchSize` to a batch (the last one fewer).
    let batches: [UnsafeMutablePointer<Event>]
    let batchSize: Int
    let times: UnsafeBufferPointer<Int64>
    let firstDevice: Int
    let elapsed: Double
    let ingestNanos: UInt64

    /// Generates the readings of part `part` (devices `bounds[part]..<bounds[part + 1]`), in order, into their
    /// places: the runs of the generation where the part's devices come round.
    func generate(_ part: Int) {
        let (low, high, devices) = (bounds[part], bounds[part + 1], bounds[bounds.count - 1])
        var spare = SpareTexts()
        var index = 0
        var device = firstDevice
        while index < times.count {
            if device >= low, device < high {
                let end = index + min(high - device, times.count - index)
                var (batch, offset) = index.quotientAndRemainder(dividingBy: batchSize)
                for place in index..<end {
                    (batches[batch] + offset).initialize(
                        to: parts[part].pointee.nextReading(
                            timestampMillis: times[place], elapsed: elapsed, ingestNanos: ingestNanos,
                            reusing: &spare))
                    offset += 1
                    if offset == batchSize { (batch, offset) = (batch + 1, 0) }
                }
                device += end - index
                index = end
            } else {
                // On to the part's first device, round past the last device if it lies behind.
                let skip = device < low ? low - device : devices - device + low
                index += skip
                device += skip
            }
            if device >= devices { device -= devices }
        }
        spare.finish()
    }
}
