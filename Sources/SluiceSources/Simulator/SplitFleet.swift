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
    /// The lower half of the devices, then the upper (one part with a single device).
    private var parts: [Fleet]
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
        parts = [lower]
        if let upper = lower.splitOff() { parts = [lower, upper] }
    }

    /// The next `times.count` readings, the `n`th at `times[n]`, each `elapsed` seconds after its device's last.
    mutating func readings(at times: [Int64], elapsed: Double, ingestNanos: UInt64) -> [Event] {
        let first = nextDevice
        nextDevice = (nextDevice + times.count) % devices
        var generated: [[Event]] = [[], []]
        times.withUnsafeBufferPointer { times in
            parts.withUnsafeMutableBufferPointer { parts in
                generated.withUnsafeMutableBufferPointer { generated in
                    let work = FleetParts(
                        parts: parts, generated: generated, times: times, firstDevice: first, devices: devices,
                        middle: middle, elapsed: elapsed, ingestNanos: ingestNanos)
                    if parts.count == 2, times.count >= Self.parallelBatch {
                        DispatchQueue.concurrentPerform(iterations: 2) { work.generate($0) }
                    } else {
                        for part in parts.indices { work.generate(part) }
                    }
                }
            }
        }
        guard parts.count == 2 else { return generated[0] }
        // Back into device order: the readings of each half come in the order its devices were met.
        var batch: [Event] = []
        batch.reserveCapacity(times.count)
        var taken = (0, 0)
        var device = first
        for _ in 0..<times.count {
            if device < middle {
                batch.append(generated[0][taken.0])
                taken.0 += 1
            } else {
                batch.append(generated[1][taken.1])
                taken.1 += 1
            }
            device += 1
            if device == devices { device = 0 }
        }
        return batch
    }
}

/// One batch's work for both halves of a fleet.
private struct FleetParts: @unchecked Sendable {
    // @unchecked: the buffers outlive `concurrentPerform`, which returns only when both parts are done; `times` is
    // only read, and part `n` alone writes `parts[n]` and `generated[n]`.
    let parts: UnsafeMutableBufferPointer<Fleet>
    let generated: UnsafeMutableBufferPointer<[Event]>
    let times: UnsafeBufferPointer<Int64>
    let firstDevice: Int
    let devices: Int
    let middle: Int
    let elapsed: Double
    let ingestNanos: UInt64

    /// Generates the readings of part `part` (0: devices below `middle`, 1: the others) in the batch, in order.
    func generate(_ part: Int) {
        var readings: [Event] = []
        readings.reserveCapacity(parts.count == 1 ? times.count : times.count / 2 + 1)
        var spare = SpareTexts()
        var device = firstDevice
        for index in times.indices {
            if (device < middle) == (part == 0) {
                readings.append(
                    parts[part].nextReading(
                        timestampMillis: times[index], elapsed: elapsed, ingestNanos: ingestNanos, reusing: &spare))
            }
            device += 1
            if device == devices { device = 0 }
        }
        spare.finish()
        generated[part] = readings
    }
}
