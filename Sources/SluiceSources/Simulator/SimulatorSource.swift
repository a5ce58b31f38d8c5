internal import SluiceCore

/// Emits the fleet's readings in batches at the configured rate (or as fast as the pipeline accepts), pacing by
/// elapsed time so the rate holds whatever the batch size. With `block` downstream it simply waits.
struct SimulatorSource: Source {
    let config: SimulatorSourceConfig

    private static let batchLimit = 1024
    /// If the pipeline held the simulator back for longer than this, it resumes at the rate instead of bursting.
    private static let maxDebtSecs = 1.0

    func run(_ context: SourceContext) async throws {
        let seed = config.seed ?? UInt64.random(in: 0...UInt64(Int.max))
        if config.seed == nil {
            context.log.info("simulator '\(context.id)': seed \(seed) (set 'seed: \(seed)' to repeat this run)")
        }
        var fleet = Fleet(config, seed: seed)
        let phases =
            config.load.isEmpty
            ? config.rate.map { [SimulatorSourceConfig.Phase(rate: $0, secs: .infinity)] } ?? [] : config.load
        var phase = 0
        var phaseStart = MonotonicClock.nanos()
        var emittedInPhase = 0
        var total = 0
        let runStart = MonotonicClock.nanos()
        let wallStart = WallClock.nowMillis()

        while !context.stop.isStopped, !Task.isCancelled {
            if let count = config.count, total >= count { break }
            let now = MonotonicClock.nanos()
            var due = Self.batchLimit
            var rate = 0.0
            if !phases.isEmpty {
                var elapsed = Double(now &- phaseStart) / 1e9
                if elapsed >= phases[phase].secs {
                    phase = (phase + 1) % phases.count
                    phaseStart = now
                    emittedInPhase = 0
                    elapsed = 0
                }
                rate = phases[phase].rate
                let target = Int(rate * elapsed)
                if target - emittedInPhase > Int(rate * Self.maxDebtSecs) + Self.batchLimit {
                    // Held back by the pipeline: forget the debt rather than burst.
                    emittedInPhase = target - Self.batchLimit
                }
                due = min(Self.batchLimit, target - emittedInPhase)
                if due <= 0 {
                    // Sleep until the next event is due, at most 50 ms so a stop is noticed promptly.
                    let wait = max(0.0005, min(0.05, Double(emittedInPhase + 1) / rate - elapsed))
                    do {
                        try await Task.sleep(for: .nanoseconds(Int64(wait * 1e9)))
                    } catch {
                        // Cancelled: a sleep that returns at once must end the loop, not spin it.
                        break
                    }
                    continue
                }
            }
            if let count = config.count { due = min(due, count - total) }
            let perDevice = rate > 0 ? Double(config.devices) / rate : 0.1
            var batch: [Event] = []
            batch.reserveCapacity(due)
            for _ in 0..<due {
                let millis: Int64
                if let start = config.startTimeMillis {
                    // A virtual clock: 1/rate per event (1 ms per event at `rate: max`).
                    millis = start + Int64((Double(total) * 1000 / (rate > 0 ? rate : 1000)).rounded(.down))
                } else {
                    millis = wallStart + Int64((now &- runStart) / 1_000_000)
                }
                batch.append(fleet.nextReading(timestampMillis: millis, elapsed: perDevice, ingestNanos: now))
                total += 1
            }
            emittedInPhase += due
            context.metrics.recordReceived(batch.count)
            await context.output.send(batch)
            if phases.isEmpty { await Task.yield() }
        }
    }
}
