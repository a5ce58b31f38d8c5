internal import SluiceCore

/// Emits the fleet's readings in batches at the configured rate (or as fast as the pipeline accepts), pacing by
/// elapsed time so the rate holds whatever the batch size. With `block` downstream it simply waits.
///
/// When a reload gives it new options, the next instance goes on where this one stopped: the readings counted
/// (against `count`), the virtual clock, and, while the options that shape the fleet (devices, seed, area,
/// anomalies) are the same, the fleet itself, so that every device keeps its position and its `seq`.
struct SimulatorSource: Source {
    let config: SimulatorSourceConfig

    /// Readings generated at once at `rate: max`, sent in batches of ``EventBuffer/batchEvents`` (a larger batch
    /// would be split, and copied, by the consumer's buffer): the fleet's parts meet on both cores once per
    /// generation, and each meeting leaves the cores idle for a while (a woken core starts 20 to 50 µs later here).
    /// Four batches at once: each core idle 12 to 14 % of the run instead of 16 to 23 % (`perf sched`), wall time
    /// 0.89 of one batch at once (11 alternating runs); eight gained nothing more.
    private static let unpacedReadings = 4 * EventBuffer.batchEvents

    /// If the pipeline held the simulator back for longer than this, it resumes at the rate instead of bursting.
    private static let maxDebtSecs = 1.0

    /// Where an instance stopped, for the one that replaces it.
    struct Place: Sendable {
        let fleet: SplitFleet
        let options: SimulatorSourceConfig
        let seed: UInt64
        let total: Int
        /// The virtual timestamp the next reading would have had, when `start_time` is set.
        let nextVirtualMillis: Int64?
    }

    func run(_ context: SourceContext) async throws {
        let place = context.handOver.take(Place.self)
        let seed = config.seed ?? place?.seed ?? UInt64.random(in: 0...UInt64(Int.max))
        if config.seed == nil, place == nil {
            context.log.info("simulator '\(context.id)': seed \(seed) (set 'seed: \(seed)' to repeat this run)")
        }
        var fleet: SplitFleet
        // The same options make the same seed: a random one is the place's.
        if let place, place.options.shapesTheSameFleet(as: config) {
            fleet = place.fleet
        } else {
            fleet = SplitFleet(config, seed: seed)
        }
        let phases =
            config.load.isEmpty
            ? config.rate.map { [SimulatorSourceConfig.Phase(rate: $0, secs: .infinity)] } ?? [] : config.load
        var phase = 0
        var phaseStart = MonotonicClock.nanos()
        var emittedInPhase = 0
        var total = place?.total ?? 0
        // The virtual clock goes on from where a replaced instance left it, at this instance's rate.
        let virtualStart = (total: total, millis: place?.nextVirtualMillis ?? config.startTimeMillis)
        let runStart = MonotonicClock.nanos()
        let wallStart = WallClock.nowMillis()

        while !context.stop.isStopped, !Task.isCancelled {
            if let count = config.count, total >= count { break }
            let now = MonotonicClock.nanos()
            var due = Self.unpacedReadings
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
                if target - emittedInPhase > Int(rate * Self.maxDebtSecs) + EventBuffer.batchEvents {
                    // Held back by the pipeline: forget the debt rather than burst.
                    emittedInPhase = target - EventBuffer.batchEvents
                }
                due = min(EventBuffer.batchEvents, target - emittedInPhase)
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
            let wallMillis = wallStart + Int64((now &- runStart) / 1_000_000)
            let times = (total..<total + due).map { virtualMillis($0, from: virtualStart, rate: rate) ?? wallMillis }
            let batches = fleet.readings(at: times, elapsed: perDevice, ingestNanos: now)
            total += due
            emittedInPhase += due
            for batch in batches {
                context.metrics.recordReceived(batch.count)
                await context.output.send(batch)
            }
            if phases.isEmpty { await Task.yield() }
        }
        if context.handOver.isWanted {
            let rate = phases.isEmpty ? 0 : phases[phase].rate
            context.handOver.leave(
                Place(
                    fleet: fleet, options: config, seed: seed, total: total,
                    nextVirtualMillis: virtualMillis(total, from: virtualStart, rate: rate)))
        }
    }

    /// The virtual timestamp of reading number `total`: 1/rate per reading after `start` (1 ms per reading at
    /// `rate: max`); `nil` without a virtual clock.
    private func virtualMillis(_ total: Int, from start: (total: Int, millis: Int64?), rate: Double) -> Int64? {
        guard let millis = start.millis else { return nil }
        return millis + Int64((Double(total - start.total) * 1000 / (rate > 0 ? rate : 1000)).rounded(.down))
    }
}

extension SimulatorSourceConfig {
    /// True when `other` makes the same fleet: the same devices, seed, area and anomalies; only the pace differs.
    func shapesTheSameFleet(as other: SimulatorSourceConfig) -> Bool {
        devices == other.devices && seed == other.seed && centerLat == other.centerLat
            && centerLon == other.centerLon && radiusMetres == other.radiusMetres && anomalies == other.anomalies
    }
}
