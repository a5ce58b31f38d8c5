import SluiceCore
import Testing

struct SimulatorSourceTests {
    static func pipeline(_ options: String, into name: String) -> String {
        """
        sources:
          sim: {type: simulator, \(options)}
        sinks:
          out: {type: collect, inputs: [sim], into: \(name), buffer: unbounded}
        """
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
