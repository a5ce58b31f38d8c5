internal import SluiceCore

#if canImport(Dispatch)
    internal import Dispatch
#endif

/// The fleet in two halves, each drawing from its own random stream, so that a large batch is generated on both
/// cores: the simulator's own task is what limits `simulator -> blackhole`.
///
/// Readings still go round the devices in order, as from one fleet: reading `p` of a run is from device
/// `p mod devices`. Each half meets its own devices in that same order whatever the batch sizes, and draws only
/// from its own stream, so a seeded run gives the same readings whether a batch was generated on one thread or two.
struct SplitFleet: Sendable {
    /// The lower half of the devices, then the upper (one part with a single device), apart in memory: each part
    /// writes its state (its random stream, its next device) for every reading. Handed over whole on a reload.
    private let parts: Separated<Fleet>
    /// The device of the next reading.
    private var nextDevice = 0
    private let devices: Int
    /// The first device of the upper half.
    private let middle: Int

    /// Batches smaller than this are generated on the calling thread: a hand-off costs a few microseconds.
    static let parallelBatch = 256

    init(_ config: SimulatorSourceConfig, seed: UInt64) {
        var lower = Fleet(config, seed: seed)
        devices = lower.deviceCount
        middle = lower.deviceCount == 1 ? 1 : (lower.deviceCount + 1) / 2
        let upper = lower.splitOff()
        parts = Separated(upper.map { [lower, $0] } ?? [lower])
    }

    /// The next `times.count` readings, the `n`th at `times[n]`, each `elapsed` seconds after its device's last.
    mutating func readings(at times: [Int64], elapsed: Double, ingestNanos: UInt64) -> [Event] {
        let first = nextDevice
        nextDevice = (nextDevice + times.count) % devices
        // Each half writes its readings straight into their places in the batch (the places of its devices), so
        // that they are not copied into device order afterwards: the copy retained every reading's text, and
        // freeing the halves' arrays released them again.
        return Array(unsafeUninitializedCapacity: times.count) { batch, initialized in
            times.withUnsafeBufferPointer { times in
                let work = FleetParts(
                    parts: parts, batch: batch, times: times, firstDevice: first, devices: devices,
                    middle: middle, elapsed: elapsed, ingestNanos: ingestNanos)
                if parts.count == 2, times.count >= Self.parallelBatch {
                    DispatchQueue.concurrentPerform(iterations: 2) { work.generate($0) }
                } else {
                    for part in 0..<parts.count { work.generate(part) }
                }
            }
            initialized = times.count
        }
    }
}

/// One batch's work for both halves of a fleet.
private struct FleetParts: @unchecked Sendable {
    // @unchecked: the buffers outlive `concurrentPerform`, which returns only when both parts are done; `times` is
    // only read, part `n` alone writes `parts[n]`, and the two parts initialize disjoint places of `batch` (those of
    // their own devices), together every one.
    let parts: Separated<Fleet>
    let batch: UnsafeMutableBufferPointer<Event>
    let times: UnsafeBufferPointer<Int64>
    let firstDevice: Int
    let devices: Int
    let middle: Int
    let elapsed: Double
    let ingestNanos: UInt64

    /// Generates the readings of part `part` (0: devices below `middle`, 1: the others; the only part when there is
    /// one) in the batch, in order, into their places in `batch`.
    func generate(_ part: Int) {
        var spare = SpareTexts()
        var device = firstDevice
        for index in times.indices {
            // With one device there is one part, and `middle` is 1: device 0 is part 0's.
            if (device < middle) == (part == 0) {
                (batch.baseAddress! + index).initialize(
                    to: parts[part].pointee.nextReading(
                        timestampMillis: times[index], elapsed: elapsed, ingestNanos: ingestNanos, reusing: &spare))
            }
            device += 1
            if device == devices { device = 0 }
        }
        spare.finish()
    }
}
