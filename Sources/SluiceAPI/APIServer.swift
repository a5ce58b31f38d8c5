public import SluiceCore
internal import SluiceSync
public import SluiceWebSocket
internal import Synchronization

/// The HTTP API of a running pipeline (the `api` section): Prometheus `/metrics`, `/health`, `/api/pipeline`,
/// `/api/metrics`, the WebSocket feeds `/api/live` and `/api/tap`, and the dashboard at `/`, all on one port of
/// an ``HTTPServer``.
///
/// Requests are answered on the server's thread from what was prepared before: the latest report (published by the
/// metrics reporter once a second) and the pipeline's graph. Nothing here waits on the pipeline, and the
/// pipeline never waits on a client: live reports and tapped events go through each client's bounded queue.
public final class APIServer: HTTPServerHandler {
    private let settings: APISettings
    /// The pipeline as it runs now: a reload replaces it.
    private let pipeline: Mutex<PipelineView>
    private let server = Mutex<HTTPServer?>(nil)
    private let state = Mutex(State())

    private struct State {
        /// The latest report, and its JSON text as `/api/metrics` and `/api/live` send it.
        var report: MetricsReport?
        var reportJSON: [UInt8] = []
        var stopping = false
        var live: Set<WebSocketConnection> = []
        /// Each tap client's tap point and watch.
        var taps: [WebSocketConnection: (point: TapPoint, watch: Int)] = [:]
        var counters = APICounters()
    }

    /// What `/api/pipeline` and `/api/tap` know of the pipeline.
    private struct PipelineView {
        var json: [UInt8]
        var taps: [String: TapPoint]
        var outputs: [String: [String]]

        init(_ definition: PipelineDefinition, metrics: [ComponentMetrics]) {
            json = Array(JSONWriter.string(PipelineGraph(definition).json).utf8)
            taps = Dictionary(uniqueKeysWithValues: metrics.map { ($0.id, $0.tap) })
            outputs = Dictionary(uniqueKeysWithValues: definition.components.map { ($0.id, $0.blueprint.outputs) })
        }
    }

    /// Prepares the API for `definition`, whose components' counters and taps are `metrics`.
    public init(settings: APISettings, definition: PipelineDefinition, metrics: [ComponentMetrics]) {
        self.settings = settings
        pipeline = Mutex(PipelineView(definition, metrics: metrics))
    }

    /// A reload changed the pipeline: `/api/pipeline`, the graph and taps show `definition` from now on (taps already
    /// open go on until their component ends).
    public func pipelineChanged(_ definition: PipelineDefinition, metrics: [ComponentMetrics]) {
        let view = PipelineView(definition, metrics: metrics)
        pipeline.locked { $0 = view }
    }

    /// Starts listening (on `settings`' address, on a thread of its own); returns the URL of each listening socket,
    /// read from the socket (`http://127.0.0.1:8686/`).
    public func start() async throws(APIError) -> [String] {
        var options = HTTPServerOptions()
        options.host = settings.host
        options.port = settings.port
        let server = HTTPServer(options: options, handler: self, log: { Logger.standardError.warning("api: \($0)") })
        self.server.locked { $0 = server }
        do {
            return try await server.start().addresses.map { "http://\($0)/" }
        } catch {
            self.server.locked { $0 = nil }
            throw APIError(message: error.message)
        }
    }

    /// Takes `report` as the latest: `/metrics` and `/api/metrics` serve it from now on, and every live client is
    /// sent it.
    public func publish(_ report: MetricsReport) {
        let text = Array(JSONWriter.string(MetricsFormatter.json(report)).utf8)
        let live = state.locked { state in
            state.report = report
            state.reportJSON = text
            state.counters.liveReportsSent += state.live.count
            return state.live
        }
        let server = server.locked { $0 }
        for connection in live { server?.send([text], to: connection) }
    }

    /// From now on `/health` says the pipeline is stopping (503).
    public func markStopping() { state.locked { $0.stopping = true } }

    /// Closes every client once what is queued for it is sent (live clients get the final report first, when it
    /// was published before), stops listening, and returns once the server's thread has ended.
    public func stop() async {
        let server = server.locked { server in
            defer { server = nil }
            return server
        }
        await server?.stop()
    }

    // MARK: - HTTPServerHandler (the server's thread)

    public func respond(to request: HTTPRequest) -> HTTPResponse {
        let response = route(request)
        state.locked { $0.counters.count(request.path, response.status) }
        return response
    }

    private func route(_ request: HTTPRequest) -> HTTPResponse {
        if request.path == "/", let token = settings.token, let given = request.query["token"] {
            // The dashboard's way in: the token once in the address, kept as a cookie, and the address cleaned.
            guard constantTimeEqual(given, token) else { return Self.unauthorized }
            return HTTPResponse(
                status: 303, contentType: "text/plain; charset=utf-8", body: Array("see /\n".utf8),
                headers: [
                    HTTPHeader("Location", "/"),
                    HTTPHeader("Set-Cookie", "\(Self.cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict"),
                ])
        }
        guard isAuthorized(request) else {
            return request.path == "/" ? Self.dashboardLogin : Self.unauthorized
        }
        switch request.path {
        case "/":
            return HTTPResponse(status: 200, contentType: "text/html; charset=utf-8", body: Dashboard.page)
        case "/metrics":
            let (report, counters) = state.locked { ($0.report, $0.counters) }
            let text = (report.map { MetricsFormatter.render($0, as: .prometheus) } ?? "") + counters.prometheus()
            return HTTPResponse(
                status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: Array(text.utf8))
        case "/health":
            let stopping = state.locked { $0.stopping }
            return Self.json(stopping ? 503 : 200, ["status": .string(stopping ? "stopping" : "ok")])
        case "/api/pipeline":
            return HTTPResponse(status: 200, contentType: "application/json", body: pipeline.locked { $0.json })
        case "/api/metrics":
            let text = state.locked { $0.reportJSON }
            guard !text.isEmpty else { return Self.error(503, "no report yet") }
            return HTTPResponse(status: 200, contentType: "application/json", body: text)
        case "/api/live", "/api/tap":
            return Self.error(400, "\(request.path) is a WebSocket: connect with ws://")
        default:
            return Self.error(404, "no such path: \(request.path)")
        }
    }

    public func admit(_ request: HTTPRequest) -> HTTPResponse? {
        let refusal = checkUpgrade(request)
        if let refusal { state.locked { $0.counters.count(request.path, refusal.status) } }
        return refusal
    }

    private func checkUpgrade(_ request: HTTPRequest) -> HTTPResponse? {
        guard isAuthorized(request) else { return Self.unauthorized }
        switch request.path {
        case "/api/live": return nil
        case "/api/tap":
            if case .failure(let error) = tapRequest(request.query) { return Self.error(400, error.message) }
            return nil
        default: return Self.error(404, "no such WebSocket: \(request.path)")
        }
    }

    public func opened(_ connection: WebSocketConnection, for request: HTTPRequest) {
        let server = server.locked { $0 }
        switch request.path {
        case "/api/live":
            let latest = state.locked { state in
                state.counters.count(request.path, 101)
                state.live.insert(connection)
                return state.reportJSON
            }
            // The latest report at once: a new client has something to show before the next interval.
            if !latest.isEmpty { server?.send([latest], to: connection) }
        case "/api/tap":
            guard case .success(let tap) = tapRequest(request.query),
                let point = pipeline.locked({ $0.taps[tap.component] })
            else {
                server?.close(connection)
                return
            }
            state.locked { $0.counters.count(request.path, 101) }
            let watch = point.watch(output: tap.output, ratePerSec: tap.rate, limit: tap.limit) {
                [weak self] events, finished in
                guard let self else { return }
                let server = self.server.locked { $0 }
                server?.send(events, to: connection)
                self.state.locked { $0.counters.tapEventsSent += events.count }
                if finished { server?.close(connection) }
            }
            state.locked { $0.taps[connection] = (point, watch) }
        default:
            server?.close(connection)
        }
    }

    public func dropped(_ count: Int, for connection: WebSocketConnection) {
        state.locked { state in
            if state.live.contains(connection) {
                state.counters.liveReportsLost += count
            } else {
                state.counters.tapEventsLost += count
            }
        }
    }

    public func closed(_ connection: WebSocketConnection) {
        let tap = state.locked { state in
            state.live.remove(connection)
            return state.taps.removeValue(forKey: connection)
        }
        if let tap { tap.point.unwatch(tap.watch) }
    }

    // MARK: - Taps

    struct TapRequest: Equatable {
        var component: String
        var output: String?
        var limit: Int
        var rate: Double
    }

    /// Reads `component=ID[.OUTPUT]&limit=N&rate=R`; the failure is the message a 400 carries.
    func tapRequest(_ query: [String: String]) -> Result<TapRequest, TapRequestError> {
        guard let name = query["component"], !name.isEmpty else {
            return .failure(TapRequestError("'component' is missing: /api/tap?component=ID"))
        }
        let reference = InputReference(name)
        let (known, ids) = pipeline.locked { ($0.outputs[reference.id], $0.taps.keys.sorted()) }
        guard let outputs = known else {
            return .failure(
                TapRequestError(
                    "unknown component '\(reference.id)'; the pipeline has: " + ids.joined(separator: ", ")))
        }
        if let output = reference.output, !outputs.contains(output) {
            return .failure(
                TapRequestError(
                    outputs.isEmpty
                        ? "'\(reference.id)' has no named outputs"
                        : "'\(reference.id)' has no output '\(output)'; it has: \(outputs.joined(separator: ", "))"))
        }
        var request = TapRequest(component: reference.id, output: reference.output, limit: 100, rate: 10)
        if let text = query["limit"] {
            guard let limit = Int(text), (1...1_000_000).contains(limit) else {
                return .failure(TapRequestError("'limit' must be a whole number from 1 to 1000000, not '\(text)'"))
            }
            request.limit = limit
        }
        if let text = query["rate"] {
            guard let rate = Double(text), rate > 0, rate <= 10_000 else {
                return .failure(
                    TapRequestError(
                        "'rate' must be a number of events per second above 0 and at most 10000, not '\(text)'"))
            }
            request.rate = rate
        }
        return .success(request)
    }

    struct TapRequestError: Error, Equatable {
        let message: String
        init(_ message: String) { self.message = message }
    }

    // MARK: - Authorization

    static let cookieName = "sluice_token"

    /// True when no token is set, or the request carries it as a bearer token or the dashboard's cookie.
    private func isAuthorized(_ request: HTTPRequest) -> Bool {
        guard let token = settings.token else { return true }
        if let header = request.authorization, header.hasPrefix("Bearer "),
            constantTimeEqual(String(header.dropFirst(7)), token)
        {
            return true
        }
        for cookie in (request.cookie ?? "").split(separator: ";") {
            let pair = cookie.trimmingPrefix(" ")
            if pair.hasPrefix(Self.cookieName + "="),
                constantTimeEqual(String(pair.dropFirst(Self.cookieName.count + 1)), token)
            {
                return true
            }
        }
        return false
    }

    /// Compares without stopping at the first difference, so that timing tells nothing about the token.
    private func constantTimeEqual(_ given: String, _ token: String) -> Bool {
        let a = Array(given.utf8)
        let b = Array(token.utf8)
        var difference = a.count ^ b.count
        for index in 0..<max(a.count, b.count) {
            difference |= Int((index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0))
        }
        return difference == 0
    }

    // MARK: - Responses

    private static func json(_ status: Int, _ value: JSONValue) -> HTTPResponse {
        HTTPResponse(
            status: status, contentType: "application/json", body: Array((JSONWriter.string(value) + "\n").utf8))
    }

    private static func error(_ status: Int, _ message: String) -> HTTPResponse {
        json(status, ["error": .string(message)])
    }

    private static let unauthorized: HTTPResponse = {
        var response = error(401, "a token is needed: send 'Authorization: Bearer <token>'")
        response.headers = [HTTPHeader("WWW-Authenticate", "Bearer")]
        return response
    }()

    private static let dashboardLogin = HTTPResponse(
        status: 401, contentType: "text/html; charset=utf-8",
        body: Array(
            """
            <!doctype html><meta charset="utf-8"><title>sluice</title>
            <p style="font-family:sans-serif">This pipeline's API needs its token: open <code>/?token=&lt;token&gt;</code> once.</p>

            """.utf8),
        headers: [HTTPHeader("WWW-Authenticate", "Bearer")])
}

/// What the API counts about itself, in `/metrics`.
struct APICounters {
    /// Requests by path (the known ones; everything else is `other`) and status (101 for a WebSocket accepted).
    var requests: [String: [Int: Int]] = [:]
    var liveReportsSent = 0
    var liveReportsLost = 0
    var tapEventsSent = 0
    var tapEventsLost = 0

    static let paths: Set<String> = [
        "/", "/metrics", "/health", "/api/pipeline", "/api/metrics", "/api/live", "/api/tap",
    ]

    mutating func count(_ path: String, _ status: Int) {
        requests[Self.paths.contains(path) ? path : "other", default: [:]][status, default: 0] += 1
    }

    /// The counters in Prometheus' text format, with help and type.
    func prometheus() -> String {
        var lines = [
            "# HELP api_requests_total Requests to the HTTP API, by path and status (101: a WebSocket accepted).",
            "# TYPE api_requests_total counter",
        ]
        for path in requests.keys.sorted() {
            for (status, count) in requests[path]!.sorted(by: { $0.key < $1.key }) {
                lines.append("api_requests_total{path=\"\(path)\",code=\"\(status)\"} \(count)")
            }
        }
        for (name, help, value) in [
            ("api_live_reports_sent_total", "Reports queued for /api/live clients.", liveReportsSent),
            ("api_live_reports_lost_total", "Reports a slow /api/live client lost.", liveReportsLost),
            ("api_tap_events_sent_total", "Tapped events queued for /api/tap clients.", tapEventsSent),
            ("api_tap_events_lost_total", "Tapped events a slow /api/tap client lost.", tapEventsLost),
        ] {
            lines += ["# HELP \(name) \(help)", "# TYPE \(name) counter", "\(name) \(value)"]
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
