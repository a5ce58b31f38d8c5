import Foundation
import SluiceCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs every example in Pipelines/ briefly with the real binary.
@Suite(.serialized)
struct ExamplePipelinesEndToEndTests {
    /// Starts `file`, reads stdout until `enough` says so (bounded), then SIGTERM; returns stdout and the status.
    func runUntil(_ file: String, arguments: [String] = [], enough: (String) -> Bool) throws -> (
        String, Int32?, SluiceProcess
    ) {
        let child = SluiceProcess(["run", file] + arguments)
        try child.start()
        child.feed { _ in nil }
        var output = Data()
        for _ in 0..<10_000 {
            guard let data = child.readChunk() else { break }
            output.append(data)
            if enough(String(decoding: output, as: UTF8.self)) { break }
        }
        kill(child.process.processIdentifier, SIGTERM)
        output.append(child.readAllOutput())
        return (String(decoding: output, as: UTF8.self), child.waitForExit(seconds: 30), child)
    }

    @Test func sensorDemoShowsReadingsAndTheMetricsTable() throws {
        let (output, status, child) = try runUntil("Pipelines/sensor-demo.yaml") { $0.contains("── sluice metrics ·") }
        #expect(status == 0)
        let readings = output.split(separator: "\n").filter { $0.contains("°C (") && $0.contains("m from the depot") }
        #expect(!readings.isEmpty)
        #expect(output.contains("── sluice metrics (final)"))
        #expect(output.contains("sensors    source     simulator"))
        #expect(child.errorText.contains("simulator 'sensors': seed "))
    }

    @Test func geofenceKeepsOnlyDevicesInsideTheFence() throws {
        let (output, status, _) = try runUntil("Pipelines/geofence.yaml") { text in
            text.split(separator: "\n").count >= 5
        }
        #expect(status == 0)
        let events = try output.split(separator: "\n").map { try JSONReader.parse(String($0)) }
        #expect(events.count >= 5)
        for event in events {
            guard case .double(let distance)? = event["fence"]?["distance_m"] else {
                Issue.record("no fence distance in \(event)")
                continue
            }
            #expect(distance < 1000)
            guard case .object(let object) = event else { continue }
            #expect(object.fields.map(\.key) == ["device", "seq", "ts", "epoch_ms", "lat", "lon", "fence"])
        }
    }

    @Test func logErrorsKeepsErrorLinesWithFields() throws {
        let (status, output, _) = try SluiceProcess.run(
            ["run", "Pipelines/log-errors.yaml"],
            stdin:
                "INFO start\nERROR disk full on /dev/sda1\nWARN slow\nerror: timeout after 30s\nFATAL error now\nterrorism is not a match\n"
        )
        #expect(status == 0)
        let events = try output.split(separator: "\n").map { try JSONReader.parse(String($0)) }
        #expect(
            events.map { $0["line"] } == [
                "ERROR disk full on /dev/sda1", "error: timeout after 30s", "FATAL error now",
            ])
        #expect(events.map { $0["level"] } == ["error", "error", "fatal"])
        #expect(events.map { $0["words"] } == [5, 4, 3])
    }

    @Test func burstBackpressureDropsOnTheStalledConsoleOnly() throws {
        let child = SluiceProcess(["run", "Pipelines/burst-backpressure.yaml", "--metrics-interval", "0.25"])
        try child.start()
        child.feed { _ in nil }
        // Nobody reads stdout, like a terminal that cannot keep up: the console's drop_oldest buffer must shed load
        // while the lossless archive keeps everything.
        #expect(child.waitForErrorText("buffer_full=", seconds: 30))
        kill(child.process.processIdentifier, SIGTERM)
        _ = child.readAllOutput()
        #expect(child.waitForExit(seconds: 30) == 0)
        let final = try #require(child.errorText.components(separatedBy: "(final)").last)
        let console = try #require(final.split(separator: "\n").first { $0.hasPrefix("console") })
        let archive = try #require(final.split(separator: "\n").first { $0.hasPrefix("archive") })
        #expect(console.contains("buffer_full="))
        #expect(!archive.contains("buffer_full="))
        #expect(child.errorText.contains("bottleneck: console"))
    }

    /// Rate accuracy is measured on the binary, whose scheduler no test process can starve.
    @Test func theSimulatorHoldsItsRateWithinFivePercent() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              sim: {type: simulator, devices: 100, rate: 20000, count: 60000, seed: 11}
            sinks:
              out: {type: blackhole, inputs: [sim]}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let (status, _, _) = try SluiceProcess.run(["run", pipeline.path])
        #expect(status == 0)
        let report = try #require(try pipeline.reports().last)
        guard case .double(let seconds)? = report["uptime_secs"] else {
            Issue.record("no uptime")
            return
        }
        #expect(try pipeline.finalComponent("out")?.int("sent_events_total") == 60000)
        // 60,000 events at 20,000/s take 3 s; within 5 % means 2.85 to 3.15 s.
        #expect(underSanitizer || (seconds > 2.85 && seconds < 3.15), "took \(seconds) s")
    }
}
