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
        // Each part writes its readings straight into their places (the places of its devices), so that they are
        // not copied into device order afterwards: the copy retained every reading's text, and freeing the parts'
        // arrays released them again.
        let readings = UnsafeMutableBufferPointer<Event>.allocate(capacity: times.count)
        defer { readings.deallocate() }
        times.withUnsafeBufferPointer { times in
            let work = FleetParts(
                parts: parts, bounds: bounds, batch: readings, times: times, firstDevice: first,
                elapsed: elapsed, ingestNanos: ingestNanos)
            if parts.count > 1, times.count >= Self.parallelBatch {
                DispatchQueue.concurrentPerform(iterations: parts.count) { work.generate($0) }
            } else {
                for part in 0..<parts.count { work.generate(part) }
            }
        }
        // Moved into the batches, not copied: nothing is reference-counted on the way.
        return stride(from: 0, to: times.count, by: batchSize).map { start in
            let count = min(batchSize, times.count - start)
            return Array(unsafeUninitializedCapacity: count) { batch, initialized in
                batch.baseAddress!.moveInitialize(from: readings.baseAddress! + start, count: count)
                initialized = count
            }
        }
    }
}

/// One batch's work for every part of a fleet.
private struct FleetParts: @unchecked Sendable {
    // @unchecked: the buffers outlive `concurrentPerform`, which returns only when every part is done; `times` and
    // `bounds` are only read, part `n` alone writes `parts[n]`, and the parts initialize disjoint places of `batch`
    // (those of their own devices), together every one.
    let parts: Separated<Fleet>
    let bounds: [Int]
    let batch: UnsafeMutableBufferPointer<Event>
    let times: UnsafeBufferPointer<Int64>
    let firstDevice: Int
    let elapsed: Double
    let ingestNanos: UInt64

    /// Generates the readings of part `part` (devices `bounds[part]..<bounds[part + 1]`) in the batch, in order,
    /// into their places in `batch`: the runs of the batch where the part's devices come round.
    func generate(_ part: Int) {
        let (low, high, devices) = (bounds[part], bounds[part + 1], bounds[bounds.count - 1])
        var spare = SpareTexts()
        var index = 0
        var device = firstDevice
        while index < times.count {
            if device >= low, device < high {
                let end = index + min(high - device, times.count - index)
                for place in index..<end {
                    (batch.baseAddress! + place).initialize(
                        to: parts[part].pointee.nextReading(
                            timestampMillis: times[place], elapsed: elapsed, ingestNanos: ingestNanos,
                            reusing: &spare))
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
