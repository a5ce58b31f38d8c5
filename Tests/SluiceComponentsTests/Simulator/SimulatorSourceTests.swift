import SluiceCore
import SluiceTesting
import Testing

@testable import SluiceSources

struct SimulatorSourceTests {
    static func pipeline(_ options: String, into name: String) -> String {
        """
        sources:
          sim: {type: simulator, \(options)}
        sinks:
          out: {type: collect, inputs: [sim], into: \(name), buffer: unbounded}
        """
    }

    /// The table-driven normal noise: mean, deviation and the share beyond 1.96 deviations (5 %) as a normal
    /// distribution has them, and the same sequence for the same seed.
    @Test func gaussianNoiseIsNormal() {
        var random = SeededRandom(seed: 5)
        let count = 200_000
        let samples = (0..<count).map { _ in random.gaussian(10, 2) }
        let mean = samples.reduce(0, +) / Double(count)
        let deviation = (samples.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(count)).squareRoot()
        let beyond = Double(samples.filter { abs($0 - 10) > 1.96 * 2 }.count) / Double(count)
        #expect(abs(mean - 10) < 0.02)
        #expect(abs(deviation - 2) < 0.02)
        #expect(abs(beyond - 0.05) < 0.003)
        var again = SeededRandom(seed: 5)
        #expect(samples.prefix(100).elementsEqual((0..<100).map { _ in again.gaussian(10, 2) }))
    }

    /// Readings are written as text directly: it must be exactly what the writer writes for their value, and
    /// fields read from it must be found, including near zero where Swift writes an exponent.
    /// Cancelling the task that runs a pipeline stops its sources and lets it drain. A simulator between readings
    /// is asleep; a cancelled sleep returns at once, and the simulator must end rather than loop on it.
    @Test func cancellingTheRunStopsAPacedSimulator() async throws {
        let definition = try #require(
            ComponentHarness.load(Self.pipeline("rate: 2, seed: 1", into: "cancelled")).definition)
        let runner = PipelineRunner(definition: definition, log: Logger { _ in })
        let run = Task { await runner.run(reporter: nil) }
        run.cancel()
        let outcome = await value(of: run, within: 10)
        #expect(outcome?.failures == [], "the run ended, without a failure")
        _ = CollectedEvents.take("cancelled")
    }

    @Test func readingsAreCanonicalText() async throws {
        for (center, seed) in [("{lat: 52.52, lon: 13.4}", 1), ("{lat: 0.0, lon: 0.0}", 2)] {
            let options = """
                devices: 50, rate: max, count: 3000, seed: \(seed), center: \(center), radius_m: 30,
                anomalies: {dropout_probability: 0.3}
                """
            let (events, _) = try await ComponentHarness.runEvents(
                Self.pipeline(options, into: "sim-text-\(seed)"), collecting: "sim-text-\(seed)")
            #expect(events.count == 3000)
            var nearZero = 0
            for event in events {
                #expect(event.isText)
                var text: [UInt8] = []
                event.writeJSON(to: &text)
                #expect(text.elementsEqual(Array(JSONWriter.string(event.value).utf8)))
                #expect(event.lookup([.key("lat")]) == event.value["lat"])
                if case .double(let lat)? = event.value["lat"], abs(lat) < 1e-4 { nearZero += 1 }
            }
            #expect(seed == 1 || nearZero > 0)
        }
    }

    @Test func aSeededRunWithCountAndStartTimeRepeatsExactly() async throws {
        let options = "devices: 7, rate: max, count: 5000, seed: 99, start_time: '2026-11-30T12:00:00Z'"
        let (first, _) = try await ComponentHarness.run(Self.pipeline(options, into: "sim-a"), collecting: "sim-a")
        let (second, _) = try await ComponentHarness.run(Self.pipeline(options, into: "sim-b"), collecting: "sim-b")
        #expect(first.count == 5000)
        #expect(first.map(JSONWriter.string) == second.map(JSONWriter.string))
        #expect(first[0]["ts"] == "2026-11-30T12:00:00.000Z")
        #expect(first[1]["ts"] == "2026-11-30T12:00:00.001Z")
        let other = try await ComponentHarness.run(
            Self.pipeline(
                "devices: 7, rate: max, count: 50, seed: 100, start_time: '2026-11-30T12:00:00Z'", into: "sim-c"),
            collecting: "sim-c")
        #expect(other.0.map(JSONWriter.string) != Array(first.prefix(50)).map(JSONWriter.string))
    }

    /// A large batch is generated on both cores, each part of the devices drawing from its own random stream: the
    /// readings are the same whether a batch was made on one thread or on two, and go round the devices in order,
    /// in batches of the size asked for.
    @Test(arguments: [1, 2, 7, 20, 1000])
    func readingsAreTheSameFromOneThreadOrTwo(devices: Int) throws {
        let loaded = ComponentHarness.load(Self.pipeline("devices: \(devices), rate: max, seed: 3", into: "unused"))
        let config = try #require(loaded.definition?.components.first?.blueprint.config as? SimulatorSourceConfig)
        var together = SplitFleet(config, seed: 3)
        var oneByOne = SplitFleet(config, seed: 3)
        let times = (0..<1_000).map { 1_796_040_000_000 + Int64($0) }
        #expect(times.count >= SplitFleet.parallelBatch)
        let batches = together.readings(at: times, elapsed: 0.1, ingestNanos: 0, batchSize: 300)
        #expect(batches.map(\.count) == [300, 300, 300, 100])
        let batch = Array(batches.joined())
        var single: [Event] = []
        for time in times { single += oneByOne.readings(at: [time], elapsed: 0.1, ingestNanos: 0).joined() }
        #expect(batch.count == 1_000)
        #expect(batch.map(\.jsonText) == single.map(\.jsonText))
        for (position, reading) in batch.enumerated() {
            let device = String(position % devices)
            let name = "dev-" + String(repeating: "0", count: 4 - device.count) + device
            #expect(reading.value["device"] == .string(name))
            #expect(reading.value["seq"] == .int(Int64(position / devices)))
        }
    }

    @Test func eventsHaveTheDocumentedShapeAndPerDeviceSequences() async throws {
        let (events, _) = try await ComponentHarness.run(
            Self.pipeline(
                "devices: 4, rate: max, count: 400, seed: 1, anomalies: {spike_probability: 0, dropout_probability: 0}",
                into: "sim-shape"),
            collecting: "sim-shape")
        guard case .object(let first) = events[0] else {
            Issue.record("not an object")
            return
        }
        #expect(
            first.fields.map(\.key) == [
                "device", "seq", "ts", "lat", "lon", "speed_mps", "heading_deg", "temperature", "humidity", "battery",
            ])
        for device in ["dev-0000", "dev-0001", "dev-0002", "dev-0003"] {
            let seqs = events.filter { $0["device"] == .string(device) }.map { $0["seq"] }
            #expect(seqs == (0..<100).map { JSONValue.int(Int64($0)) })
        }
        for event in events {
            guard case .double(let temperature)? = event["temperature"], case .double(let battery)? = event["battery"]
            else {
                Issue.record("missing sensor in \(event)")
                continue
            }
            #expect((-10...60).contains(temperature))
            #expect((0...1).contains(battery))
        }
    }

    @Test func positionsStayWithinTheRadius() async throws {
        let (events, _) = try await ComponentHarness.run(
            Self.pipeline(
                "devices: 20, rate: max, count: 20000, seed: 3, radius_m: 300, center: {lat: 48.8566, lon: 2.3522}, start_time: '2026-11-30T00:00:00Z'",
                into: "sim-radius"),
            collecting: "sim-radius")
        var farthest = 0.0
        for event in events {
            guard case .double(let lat)? = event["lat"], case .double(let lon)? = event["lon"] else { continue }
            farthest = max(farthest, Geo.distanceMetres(lat1: 48.8566, lon1: 2.3522, lat2: lat, lon2: lon))
        }
        #expect(farthest <= 300)
        // Devices do roam: someone gets well away from the centre.
        #expect(farthest > 150)
    }

    @Test func anomaliesSpikeAndDropOut() async throws {
        let (spiky, _) = try await ComponentHarness.run(
            Self.pipeline(
                "rate: max, count: 200, seed: 5, anomalies: {spike_probability: 1, dropout_probability: 0}",
                into: "sim-spike"),
            collecting: "sim-spike")
        #expect(spiky.allSatisfy { if case .double(let t)? = $0["temperature"] { t >= 85 } else { false } })
        let (gappy, _) = try await ComponentHarness.run(
            Self.pipeline(
                "rate: max, count: 200, seed: 5, anomalies: {spike_probability: 0, dropout_probability: 1}",
                into: "sim-gap"),
            collecting: "sim-gap")
        #expect(
            gappy.allSatisfy { event in
                if case .object(let object) = event { object.count == 9 } else { false }
            })
    }

    @Test func invalidOptionsAreReported() {
        let yaml = Self.pipeline("rate: fast, start_time: 'noon', load: {rate: 5}", into: "x")
        let text = ComponentHarness.diagnostics(yaml)
        #expect(text.contains("error: expected a number for 'rate', found 'fast'"))
        #expect(text.contains("error: 'start_time' is not an RFC 3339 time: 'noon'"))
        #expect(text.contains("error: expected a list for 'load', found a mapping"))
    }
}
