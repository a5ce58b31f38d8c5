import Foundation
import SluiceCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The HTTP API of a running `sluice run` (the `api` section), checked from outside by independent clients:
/// Python's http.client and websockets, prometheus_client's parser, promtool, tmux, and the `sluice top` and
/// `sluice tap` commands.
@Suite(.serialized, .blocking)
struct APIEndToEndTests {
    /// A simulator through a filter, a map with its own buffer and a value from the environment (a stand-in for a
    /// secret), and a route, into a blackhole.
    static let pipeline = """
        sources:
          sensors:
            type: simulator
            devices: 20
            rate: 2000
            seed: 7
        transforms:
          warm:
            type: filter
            inputs: [sensors]
            condition: (.temperature ?? 0) > 20
          tagged:
            type: map
            inputs: [warm]
            buffer: {max_events: 500, when_full: block}
            set:
              site: '"${SLUICE_TEST_SITE}"'
          route:
            type: route
            inputs: [tagged]
            routes:
              hot: .temperature > 30
        sinks:
          out:
            type: blackhole
            inputs: [route.hot]
        api:
          listen: 127.0.0.1:0
          token: ${SLUICE_TEST_TOKEN}
        metrics:
          interval_secs: 0
          to: $METRICS
          format: json
        """

    static let secretSite = "site-secret-\(UUID().uuidString.prefix(6))"

    static func start(_ yaml: String = pipeline) throws -> APIPipeline {
        try APIPipeline(yaml, environment: ["SLUICE_TEST_SITE": secretSite])
    }

    @Test func everyEndpointAnswersWithItsStatusAndIsCounted() throws {
        let api = try Self.start()
        defer { api.stop() }
        let bearer = api.bearer

        // Health, and the token: missing and wrong are 401, with the scheme named.
        let anonymous = try api.get("/health")
        #expect(anonymous["status"] == 401)
        #expect(anonymous["headers"]?["www-authenticate"] == "Bearer")
        #expect(try api.get("/health", headers: ["--header", "Authorization: Bearer wrong"])["status"] == 401)
        let health = try api.get("/health", headers: bearer)
        #expect(health["status"] == 200)
        #expect(health["headers"]?["content-type"] == "application/json")
        #expect(try JSONReader.parse(health["body"]?.stringValue ?? "") == ["status": "ok"])

        // Unknown paths are 404, a WebSocket path asked for as a page 400, each with a message.
        let missing = try api.get("/nope", headers: bearer)
        #expect(missing["status"] == 404)
        #expect(missing["body"]?.stringValue?.contains("no such path: /nope") == true)
        #expect(try api.get("/api/live", headers: bearer)["status"] == 400)

        // WebSocket upgrades: refused with the same statuses before the handshake.
        func upgrade(_ path: String, _ headers: [String]) throws -> JSONValue {
            try APIPeer.run(["upgrade", api.base + path] + headers)
        }
        let unknown = try upgrade("/api/tap?component=nope", bearer)
        #expect(unknown["status"] == 400)
        #expect(unknown["body"]?.stringValue?.contains("unknown component 'nope'") == true)
        #expect(unknown["body"]?.stringValue?.contains("out, route, sensors, tagged, warm") == true)
        let noOutput = try upgrade("/api/tap?component=route.cold", bearer)
        #expect(noOutput["status"] == 400)
        #expect(noOutput["body"]?.stringValue?.contains("no output 'cold'") == true)
        #expect(try upgrade("/api/tap?component=warm&limit=0", bearer)["status"] == 400)
        #expect(try upgrade("/api/live", [])["status"] == 401)
        #expect(try upgrade("/api/nope", bearer)["status"] == 404)
        #expect(try upgrade("/api/live", bearer)["status"] == 101)

        // The graph: components in order, edges with named outputs, options as written (the variable, never its
        // value), buffers.
        let graphResponse = try api.get("/api/pipeline", headers: bearer)
        #expect(graphResponse["status"] == 200)
        let body = graphResponse["body"]?.stringValue ?? ""
        #expect(!body.contains(Self.secretSite))
        let graph = try JSONReader.parse(body)
        let components = graph["components"]?.arrayValue ?? []
        #expect(components.map { $0["id"]?.stringValue ?? "" } == ["sensors", "warm", "tagged", "route", "out"])
        let tagged = components.first { $0["id"] == "tagged" }
        #expect(tagged?["options"]?["set"]?["site"] == "\"${SLUICE_TEST_SITE}\"")
        #expect(tagged?["buffer"] == ["when_full": "block", "max_events": 500])
        #expect(components.first { $0["id"] == "sensors" }?["buffer"] == .null)
        #expect(graph["edges"]?.arrayValue?.contains(["from": "route", "output": "hot", "to": "out"]) == true)

        // The dashboard's way in: the token once in the address becomes an HttpOnly cookie, and the address is
        // cleaned; the cookie then opens the page, which names no other host.
        #expect(try api.get("/?token=wrong")["status"] == 401)
        let login = try api.get("/?token=\(APIPipeline.token)")
        #expect(login["status"] == 303)
        #expect(login["headers"]?["location"] == "/")
        let cookie = login["headers"]?["set-cookie"]?.stringValue ?? ""
        #expect(cookie.hasPrefix("sluice_token=\(APIPipeline.token);") && cookie.contains("HttpOnly"))
        let page = try api.get("/", headers: ["--header", "Cookie: sluice_token=\(APIPipeline.token)"])
        #expect(page["status"] == 200)
        #expect(page["headers"]?["content-type"] == "text/html; charset=utf-8")
        let html = page["body"]?.stringValue ?? ""
        #expect(html.contains("<svg id=\"graph\""))
        #expect(!html.contains("https://"))
        // The one http:// in the page is the SVG namespace, which names a namespace and is never fetched.
        #expect(
            html.components(separatedBy: "http://").count - 1 == html.components(
                separatedBy: "http://www.w3.org/2000/svg"
            ).count - 1)

        // Every request above is counted by path and status (401 at the root came from the wrong token).
        let metrics = try api.get("/metrics", headers: bearer)["body"]?.stringValue ?? ""
        for (labels, count) in [
            (#"path="/health",code="401""#, 2), (#"path="/health",code="200""#, 1), (#"path="other",code="404""#, 2),
            (#"path="/api/live",code="400""#, 1), (#"path="/api/tap",code="400""#, 3),
            (#"path="/api/live",code="401""#, 1), (#"path="/api/live",code="101""#, 1),
            (#"path="/api/pipeline",code="200""#, 1), (#"path="/",code="401""#, 1), (#"path="/",code="303""#, 1),
            (#"path="/",code="200""#, 1),
        ] {
            #expect(metrics.contains("api_requests_total{\(labels)} \(count)\n"), "\(labels) should be \(count)")
        }
    }

    @Test func prometheusMetricsMatchTheJSONReportNumberByNumber() throws {
        let api = try Self.start()
        defer { api.stop() }
        // Let the pipeline run into its second report, so that rates, buffers and latencies are not all zero.
        usleep(2_200_000)
        let scraped = try APIPeer.run(["scrape", api.base, "--token", APIPipeline.token])
        #expect(scraped["error"] == nil)
        #expect(scraped["content_type"]?.stringValue?.hasPrefix("text/plain; version=0.0.4") == true)
        let report = try #require(scraped["report"])
        var samples: [String: Double] = [:]
        for sample in scraped["samples"]?.arrayValue ?? [] {
            #expect(sample["help"]?.stringValue?.isEmpty == false, "\(sample["name"] ?? .null) has no help")
            let labels = sample["labels"]?.objectFields ?? [:]
            let key =
                ([sample["name"]?.stringValue ?? ""]
                + labels.keys.sorted().map { "\($0)=\(labels[$0]?.stringValue ?? "")" })
                .joined(separator: ",")
            samples[key] = sample["value"]?.doubleValue
        }
        func value(_ name: String, _ component: JSONValue, _ extra: [String: String] = [:]) -> Double? {
            var labels = [
                "component_id": component["component_id"]?.stringValue ?? "",
                "component_kind": component["component_kind"]?.stringValue ?? "",
                "component_type": component["component_type"]?.stringValue ?? "",
            ]
            labels.merge(extra) { $1 }
            return samples[([name] + labels.keys.sorted().map { "\($0)=\(labels[$0]!)" }).joined(separator: ",")]
        }
        let components = report["components"]?.arrayValue ?? []
        #expect(components.count == 5)
        var compared = 0
        for component in components {
            let id = component["component_id"]?.stringValue ?? ""
            #expect(
                value("component_received_events_total", component) == component["received_events_total"]?.doubleValue,
                "\(id)")
            #expect(
                value("component_sent_events_total", component) == component["sent_events_total"]?.doubleValue, "\(id)")
            #expect(value("component_folded_events_total", component) == component["folded_events_total"]?.doubleValue)
            #expect(
                value("component_created_events_total", component) == component["created_events_total"]?.doubleValue)
            for field in component["discarded_events_total"]?.objectFields ?? [:] {
                #expect(
                    value("component_discarded_events_total", component, ["cause": field.key])
                        == field.value.doubleValue)
                compared += 1
            }
            if let buffer = component["buffer"], buffer != .null {
                #expect(value("buffer_events", component) == buffer["events"]?.doubleValue)
                #expect(value("buffer_max_events", component) == buffer["max_events"]?.doubleValue)
                #expect(value("buffer_high_water_events", component) == buffer["high_water_events"]?.doubleValue)
                let blocked = try #require(value("buffer_blocked_seconds_total", component))
                #expect(abs(blocked - (buffer["blocked_secs_total"]?.doubleValue ?? -1)) < 0.001)
            }
            if let latency = component["latency_ms"] {
                for (quantile, key) in [("0.5", "p50"), ("0.99", "p99")] {
                    guard let millis = latency[key]?.doubleValue else { continue }
                    let seconds = try #require(value("component_latency_seconds", component, ["quantile": quantile]))
                    #expect(abs(seconds * 1000 - millis) < 0.001, "\(id) \(key)")
                    compared += 1
                }
            }
            compared += 4
        }
        #expect(compared > 60)
        #expect((report["components"]?.arrayValue?.first?["sent_events_total"]?.intValue ?? 0) > 0)
        #expect(samples["process_max_resident_memory_bytes"] == report["process"]?["max_rss_bytes"]?.doubleValue)
    }

    @Test(
        .enabled(if: promtool != nil, "promtool is not installed (scripts/install-deps installs it, from 'prometheus')")
    )
    func promtoolFindsNothingInEitherPrometheusOutput() throws {
        let api = try Self.start()
        defer { api.stop() }
        usleep(1_200_000)
        let text = try api.get("/metrics", headers: api.bearer)["body"]?.stringValue ?? ""
        #expect(text.contains("component_latency_seconds"))
        let served = try Self.promtool(text)
        #expect(served.status == 0 && served.output.isEmpty, "promtool on /metrics: \(served.output)")

        // `format: prometheus` on a metrics file: each report alone is one exposition.
        let run = try SluiceProcess.run(
            [
                "run", "Pipelines/stdin-to-stdout.yaml", "--metrics-format", "prometheus", "--metrics-to", "stderr",
                "--metrics-interval", "0",
            ],
            stdin: "{\"a\":1}\n")
        let report = run.errors.components(separatedBy: "# sluice report").last.map { "# sluice report" + $0 } ?? ""
        #expect(report.contains("component_sent_events_total"))
        let written = try Self.promtool(report)
        #expect(written.status == 0 && written.output.isEmpty, "promtool on format: prometheus: \(written.output)")
    }

    static let promtool = installedTool("/usr/bin/promtool")

    static func promtool(_ text: String) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: promtool!)
        process.arguments = ["check", "metrics"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        try input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func liveSendsAReportEverySecondAndTapsSampleWhatLeavesAComponent() throws {
        let api = try Self.start()
        defer { api.stop() }
        let live = try APIPeer.run(["live", api.base, "--token", APIPipeline.token, "--count", "4"])
        let reports = live["messages"]?.arrayValue ?? []
        #expect(reports.count == 4)
        let uptimes = reports.compactMap { $0["uptime_secs"]?.doubleValue }
        // The first is the latest report, sent at once on connecting; then one a second.
        for (earlier, later) in zip(uptimes.dropFirst(), uptimes.dropFirst(2)) {
            #expect(later - earlier > 0.7 && later - earlier < 1.6, "reports \(earlier) and \(later)")
        }
        #expect(reports.last?["components"]?.arrayValue?.count == 5)

        // A route's named output: exactly `limit` events, each one that took that route, then a normal close.
        let hot = try APIPeer.run(
            ["tap", api.base, "/api/tap?component=route.hot&limit=5&rate=100", "--token", APIPipeline.token])
        let events = try (hot["messages"]?.arrayValue ?? []).map { try JSONReader.parse($0.stringValue ?? "") }
        #expect(events.count == 5)
        #expect(events.allSatisfy { ($0["temperature"]?.doubleValue ?? 0) > 30 })
        #expect(events.allSatisfy { $0["site"]?.stringValue == Self.secretSite })
        #expect(hot["close_code"] == 1000)

        // The rate holds: 25 events at 10 a second (a burst of 10 first) take more than a second.
        let started = Date()
        let slow = try APIPeer.run(
            ["tap", api.base, "/api/tap?component=sensors&limit=25&rate=10", "--token", APIPipeline.token])
        #expect(slow["messages"]?.arrayValue?.count == 25)
        #expect(Date().timeIntervalSince(started) > 1.3)
    }

    @Test func liveClientsGetTheFinalReportBeforeTheServerCloses() throws {
        let api = try Self.start()
        defer { api.stop() }
        let live = try APIPeer.run(
            [
                "live-until-stopped", api.base, "--token", APIPipeline.token, "--pid",
                String(api.child.process.processIdentifier),
            ])
        let reports = live["messages"]?.arrayValue ?? []
        #expect(reports.count >= 3)
        #expect(reports.dropLast().allSatisfy { $0["final"] == false })
        #expect(reports.last?["final"] == true)
        #expect(live["close_code"] == 1001)
        #expect(api.child.waitForExit(seconds: 20) == 0)
    }

    @Test func aSlowTapLosesItsOwnEventsAndThePipelineGoesOn() throws {
        let api = try Self.start(
            Self.pipeline.replacingOccurrences(of: "rate: 2000", with: "rate: max"))
        defer { api.stop() }
        func sent() throws -> Int {
            let report = try JSONReader.parse(
                try api.get("/api/metrics", headers: api.bearer)["body"]?.stringValue ?? "")
            return Int(report["components"]?.arrayValue?.first?["sent_events_total"]?.intValue ?? 0)
        }
        usleep(1_200_000)
        let before = try sent()
        // 10,000 events a second into a client that reads nothing for 4 s: far more than its queue and the sockets'
        // buffers hold.
        let stalled = try APIPeer.run(
            [
                "stall", api.base, "/api/tap?component=sensors&limit=1000000&rate=10000", "--token", APIPipeline.token,
                "--secs", "4",
            ])
        let after = try sent()
        #expect(after - before > 100_000, "the pipeline moved \(after - before) events meanwhile")
        let metrics = try api.get("/metrics", headers: api.bearer)["body"]?.stringValue ?? ""
        let lost =
            metrics.split(separator: "\n").first { $0.hasPrefix("api_tap_events_lost_total ") }
            .flatMap { Int($0.split(separator: " ")[1]) } ?? 0
        #expect(lost > 0)
        let received = stalled["messages"]?.arrayValue?.count ?? 0
        #expect(received > 0)
    }

    @Test func healthSaysStoppingWhileThePipelineDrains() throws {
        let api = try APIPipeline(
            """
            sources:
              in:
                type: stdin
            sinks:
              out:
                type: stdout
                inputs: [in]
            api:
              listen: 127.0.0.1:0
              token: ${SLUICE_TEST_TOKEN}
            metrics:
              interval_secs: 0
              to: stderr
            """)
        defer { api.stop() }
        api.child.feed(sensorChunks(count: 200_000))
        // Nobody reads stdout: the sink blocks once the pipe is full, the buffer before it holds what it can (a
        // batch goes in whole or waits), and stdin waits for room: the sink is the bottleneck.
        let deadline = Date().addingTimeInterval(30)
        var buffered = 0
        var bottleneck: JSONValue = .null
        while Date() < deadline, buffered == 0 || bottleneck != "out" {
            let report = try JSONReader.parse(
                try api.get("/api/metrics", headers: api.bearer)["body"]?.stringValue ?? "")
            buffered = Int(report["components"]?.arrayValue?.last?["buffer"]?["events"]?.intValue ?? 0)
            bottleneck = report["bottleneck"] ?? .null
            usleep(100_000)
        }
        #expect(buffered > 0)
        #expect(bottleneck == "out")
        #expect(try api.get("/health", headers: api.bearer)["status"] == 200)
        kill(api.child.process.processIdentifier, SIGTERM)
        var stopping: JSONValue = .null
        for _ in 0..<50 {
            stopping = try api.get("/health", headers: api.bearer)
            if stopping["status"] == 503 { break }
            usleep(100_000)
        }
        #expect(stopping["status"] == 503)
        #expect(try JSONReader.parse(stopping["body"]?.stringValue ?? "") == ["status": "stopping"])
        // Reading stdout lets it drain and end normally.
        _ = api.child.readAllOutput()
        #expect(api.child.waitForExit() == 0)
    }

    @Test func tapCommandPrintsEventsAndNamesARefusal() throws {
        let api = try Self.start()
        defer { api.stop() }
        let tapped = try SluiceProcess.run(
            ["tap", "route.hot", "--api", api.base, "--limit", "3", "--rate", "50"],
            environment: ["SLUICE_API_TOKEN": APIPipeline.token])
        #expect(tapped.status == 0)
        let lines = tapped.output.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(try lines.allSatisfy { (try JSONReader.parse(String($0))["temperature"]?.doubleValue ?? 0) > 30 })

        let refused = try SluiceProcess.run(["tap", "warm", "--api", api.base, "--token", "wrong"])
        #expect(refused.status == 1)
        #expect(refused.errors.contains("rejected with HTTP 401"))
        let unknown = try SluiceProcess.run(["tap", "nope", "--api", api.base, "--token", APIPipeline.token])
        #expect(unknown.status == 1)
        #expect(unknown.errors.contains("rejected with HTTP 400"))
        // Nothing listening: said once, and the command ends (it does not retry as `top` does).
        let nobody = try SluiceProcess.run(["tap", "warm", "--api", "127.0.0.1:1"])
        #expect(nobody.status == 1)
        #expect(nobody.errors.contains("sluice: error: tap: ws://127.0.0.1:1/api/tap"))
    }

    @Test func topWritesPlainBlocksWhenNotATerminalAndEndsWithThePipeline() throws {
        let api = try Self.start()
        defer { api.stop() }
        let top = SluiceProcess(["top", "--api", api.base, "--token", APIPipeline.token])
        try top.start()
        defer { top.killIfRunning() }
        var output = ""
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, output.components(separatedBy: "sluice top").count < 3,
            let chunk = top.readChunkIfAvailable(waitingMillis: 2000)
        {
            output += String(decoding: chunk, as: UTF8.self)
        }
        #expect(output.components(separatedBy: "sluice top").count >= 3)
        #expect(!output.contains("\u{1B}"))
        for id in ["sensors", "warm", "tagged", "route", "out"] { #expect(output.contains(" \(id) ")) }
        #expect(output.split(separator: "\n").allSatisfy { $0.count <= 80 })
        kill(api.child.process.processIdentifier, SIGTERM)
        #expect(top.waitForExit(seconds: 20) == 0)
    }

    static let tmux = installedTool("/usr/bin/tmux")

    @Test(.enabled(if: tmux != nil, "tmux is not installed (scripts/install-deps installs it)"))
    func topRedrawsInPlaceInTmuxAndQuitsOnQ() throws {
        let api = try Self.start()
        defer { api.stop() }
        let socket = "sluice-test-\(UUID().uuidString.prefix(8))"
        func tmux(_ arguments: [String]) -> (status: Int32, output: String) {
            spawnAndWait(Self.tmux!, ["-L", socket] + arguments)
        }
        defer { _ = tmux(["kill-server"]) }
        let command =
            "SLUICE_API_TOKEN=\(APIPipeline.token) \(SluiceProcess.executable.path) top --api \(api.base)"
        #expect(tmux(["new-session", "-d", "-s", "top", "-x", "80", "-y", "24", command]).status == 0)
        var screen = ""
        var firstUptime: String?
        let deadline = Date().addingTimeInterval(20)
        // Two screens a second or more apart: the same place, new figures.
        while Date() < deadline {
            screen = tmux(["capture-pane", "-p", "-t", "top"]).output
            if let header = screen.split(separator: "\n").first(where: { $0.contains("· up ") }) {
                let uptime = String(header.split(separator: "·")[2])
                if firstUptime == nil { firstUptime = uptime } else if uptime != firstUptime { break }
            }
            usleep(200_000)
        }
        let lines = screen.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first?.hasPrefix("sluice top · \(api.base)") == true)
        #expect(lines.contains { $0.contains("COMPONENT") && $0.contains("IN/S") && $0.contains("P99 MS") })
        for id in ["sensors", "warm", "tagged", "route", "out"] {
            #expect(lines.contains { $0.hasPrefix(" \(id) ") || $0.hasPrefix("▶\(id) ") }, "no row for \(id)")
        }
        #expect(lines.allSatisfy { $0.count <= 80 })
        // Redrawn in place: the header stays on the first line, once.
        #expect(screen.components(separatedBy: "sluice top").count == 2)
        #expect(tmux(["send-keys", "-t", "top", "q"]).status == 0)
        var gone = false
        for _ in 0..<50 where !gone {
            gone = tmux(["has-session", "-t", "top"]).status != 0
            if !gone { usleep(100_000) }
        }
        #expect(gone, "top did not quit on q")
    }

    static let chromedriver = installedTool("/usr/bin/chromedriver")

    /// The dashboard in headless Chromium. Its screenshot is kept as a test artifact in
    /// `.build/test-artifacts/dashboard.png` (the README's picture is one of these).
    @Test(.enabled(if: chromedriver != nil, "chromium-driver is not installed (scripts/install-deps installs it)"))
    func dashboardDrawsThePipelineFollowsItTapsItAndSaysWhenItStops() throws {
        let api = try Self.start()
        defer { api.stop() }
        let artifacts = SluiceProcess.repository.appendingPathComponent(".build/test-artifacts")
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        let screenshot = artifacts.appendingPathComponent("dashboard.png").path
        try? FileManager.default.removeItem(atPath: screenshot)
        let seen = try APIPeer.run(
            [
                api.base, APIPipeline.token, String(api.child.process.processIdentifier),
                "sensors,warm,tagged,route,out", "tagged", screenshot,
            ], script: "dashboard_peer.py", seconds: 120)
        // The token left the address: the page was reached through its cookie.
        #expect(seen["url"] == .string(api.base + "/"))
        #expect(seen["graph"] == ["out", "route", "sensors", "tagged", "warm"])
        // The figures move, in place.
        let first = seen["first"]?.arrayValue ?? []
        let second = seen["second"]?.arrayValue ?? []
        #expect((Double(first.first?.stringValue ?? "") ?? 0) + 2 < (Double(second.first?.stringValue ?? "") ?? 0))
        #expect(first.last?["sensors"] != second.last?["sensors"])
        #expect(seen["layout_unchanged"] == true)
        // And they are /api/metrics' figures for the report shown.
        #expect(seen["matched"] == true, "page and /api/metrics differ: \(seen["compared"] ?? .null)")
        // The tap panel shows events leaving `tagged`, pretty-printed, with the field it sets.
        #expect(seen["tap_title"]?.stringValue?.contains("tagged") == true)
        let tapped = seen["tapped"]?.arrayValue ?? []
        #expect(!tapped.isEmpty)
        #expect(tapped.allSatisfy { $0["site"]?.stringValue == Self.secretSite })
        #expect(seen["tapped_pretty"] == true)
        // Stopping the pipeline: the page says so.
        #expect(seen["ended"] == true)
        #expect(seen["stopped_message"]?.stringValue?.contains("The pipeline has stopped") == true)
        #expect(seen["state"] == "stopped")
        #expect(seen["console_errors"]?.arrayValue?.isEmpty == true, "\(seen["console_errors"] ?? .null)")
        #expect(FileManager.default.fileExists(atPath: screenshot))
        #expect(api.child.waitForExit(seconds: 20) == 0)
    }

    /// The Python of the venv scripts/install-deps makes for marionette_driver, when it is there.
    static let firefoxPython: String? =
        installedTool("/usr/bin/firefox-esr") != nil
        ? installedTool("/opt/sluice-test-venv/bin/python3") : nil

    /// The dashboard in Firefox too: it draws the graph, follows the reports and taps a component.
    @Test(
        .enabled(
            if: firefoxPython != nil,
            "firefox-esr or the marionette_driver venv is missing (scripts/install-deps installs both)"))
    func dashboardWorksInFirefox() throws {
        let api = try Self.start()
        defer { api.stop() }
        let screenshot = SluiceProcess.repository.appendingPathComponent(".build/test-artifacts/dashboard-firefox.png")
        try FileManager.default.createDirectory(
            at: screenshot.deletingLastPathComponent(), withIntermediateDirectories: true)
        let seen = try APIPeer.run(
            [api.base, APIPipeline.token, screenshot.path], script: "firefox_peer.py", python: Self.firefoxPython!,
            seconds: 120)
        #expect(seen["url"] == .string(api.base + "/"))
        #expect(seen["second"]?["nodes"] == ["sensors", "warm", "tagged", "route", "out"])
        #expect(seen["second"]?["rows"] == 5)
        #expect(seen["second"]?["state"] == "live")
        let first = Double(seen["first"]?["uptime"]?.stringValue ?? "") ?? 0
        let second = Double(seen["second"]?["uptime"]?.stringValue ?? "") ?? 0
        #expect(second > first && first > 0)
        #expect((seen["tapped"]?.intValue ?? 0) > 0)
    }

    @Test func theLiveAPIExampleServesItsFleet() throws {
        let yaml = try String(
            contentsOfFile: SluiceProcess.repository.appendingPathComponent("Pipelines/live-api.yaml").path,
            encoding: .utf8)
        let api = try APIPipeline(
            yaml, environment: ["SLUICE_API_LISTEN": "127.0.0.1:0", "SLUICE_API_TOKEN": APIPipeline.token])
        defer { api.stop() }
        let graph = try JSONReader.parse(try api.get("/api/pipeline", headers: api.bearer)["body"]?.stringValue ?? "")
        #expect(
            graph["components"]?.arrayValue?.map { $0["id"]?.stringValue ?? "" }
                == ["fleet", "valid", "by_heat", "fahrenheit", "alerts", "archive"])
        let hot = try APIPeer.run(
            ["tap", api.base, "/api/tap?component=fahrenheit&limit=3&rate=100", "--token", APIPipeline.token])
        let events = try (hot["messages"]?.arrayValue ?? []).map { try JSONReader.parse($0.stringValue ?? "") }
        #expect(events.count == 3)
        #expect(events.allSatisfy { ($0["temperature_f"]?.doubleValue ?? 0) > 86 })
    }

    @Test func graphDrawsEveryComponentAndEdge() throws {
        let dot = try SluiceProcess.run(["graph", "Pipelines/route-by-severity.yaml"])
        #expect(dot.status == 0)
        #expect(dot.output.hasPrefix("digraph pipeline {\n  rankdir=LR;"))
        #expect(dot.output.contains(#""logs" [shape=cds, label="logs\nstdin"];"#))
        #expect(dot.output.contains(#""by_level" -> "fresh" [label="errors: block 8000"];"#))
        #expect(dot.output.hasSuffix("}\n"))
        let mermaid = try SluiceProcess.run(["graph", "Pipelines/route-by-severity.yaml", "--format", "mermaid"])
        #expect(mermaid.status == 0)
        #expect(mermaid.output.hasPrefix("flowchart LR\n"))
        #expect(mermaid.output.contains(#"  by_level -->|"errors: block 8000"| fresh"#))
        let invalid = try SluiceProcess.run(["graph", "Pipelines/nope.yaml"])
        #expect(invalid.status == 78)
    }
}

extension JSONValue {
    /// The fields of an object, by key.
    fileprivate var objectFields: [String: JSONValue]? {
        guard case .object(let object) = self else { return nil }
        return Dictionary(object.fields.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
    }
}

/// Runs `path` with `arguments` and waits for it, with its output in a temporary file. Not Foundation's Process:
/// the tmux client forks the tmux server, and Process then never saw the client exit (it stayed a zombie), nor did
/// a pipe's reader see the end of the output the server inherited.
func spawnAndWait(_ path: String, _ arguments: [String]) -> (status: Int32, output: String) {
    let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("spawn-\(UUID().uuidString)").path
    defer { unlink(outputPath) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    guard posix_spawn(&pid, path, &actions, nil, argv, environ) == 0 else { return (-1, "") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0, errno == EINTR {}
    let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    // WEXITSTATUS: the exit code is in the second byte of the status.
    return ((status >> 8) & 0xff, output)
}
