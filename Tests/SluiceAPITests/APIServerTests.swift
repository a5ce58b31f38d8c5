import SluiceCore
import SluiceTesting
import SluiceWebSocket
import Testing

@testable import SluiceAPI

/// The API's answers, asked directly (no socket): routing, the token, and tap requests.
struct APIServerTests {
    static let definition: PipelineDefinition = {
        let result = PipelineLoader(catalog: TestCatalog.catalog, environment: ["SECRET": "hunter2"]).load(
            """
            sources:
              numbers: {type: counter, count: 10}
            transforms:
              copy: {type: pass, inputs: [numbers], buffer: {max_events: 50, when_full: drop_oldest}}
            sinks:
              out: {type: collect, inputs: [copy], into: '${SECRET}'}
            """)
        return result.definition!
    }()

    static func server(token: String? = "s3cret") -> APIServer {
        let metrics = definition.components.map { ComponentMetrics(id: $0.id, kind: $0.kind, typeName: $0.typeName) }
        return APIServer(settings: APISettings(token: token), definition: definition, metrics: metrics)
    }

    @Test func aTokenIsNeededAsBearerOrCookie() {
        let api = Self.server()
        #expect(api.respond(to: HTTPRequest(path: "/health")).status == 401)
        #expect(api.respond(to: HTTPRequest(path: "/health", authorization: "Bearer nope")).status == 401)
        #expect(api.respond(to: HTTPRequest(path: "/health", authorization: "s3cret")).status == 401)
        #expect(api.respond(to: HTTPRequest(path: "/health", authorization: "Bearer s3cret")).status == 200)
        #expect(api.respond(to: HTTPRequest(path: "/health", cookie: "a=b; sluice_token=s3cret")).status == 200)
        #expect(api.respond(to: HTTPRequest(path: "/health", cookie: "sluice_token=s3cre")).status == 401)
        #expect(api.admit(HTTPRequest(path: "/api/live"))?.status == 401)
        #expect(api.admit(HTTPRequest(path: "/api/live", authorization: "Bearer s3cret")) == nil)
        // Without a token, everything is open.
        #expect(Self.server(token: nil).respond(to: HTTPRequest(path: "/health")).status == 200)
    }

    @Test func theDashboardTradesTheTokenInItsAddressForACookie() {
        let api = Self.server()
        let login = api.respond(to: HTTPRequest(path: "/", query: ["token": "s3cret"]))
        #expect(login.status == 303)
        #expect(login.headers.contains(HTTPHeader("Location", "/")))
        #expect(
            login.headers.contains(HTTPHeader("Set-Cookie", "sluice_token=s3cret; Path=/; HttpOnly; SameSite=Strict")))
        #expect(api.respond(to: HTTPRequest(path: "/", query: ["token": "wrong"])).status == 401)
        let page = api.respond(to: HTTPRequest(path: "/", cookie: "sluice_token=s3cret"))
        #expect(page.status == 200 && page.contentType == "text/html; charset=utf-8")
        #expect(String(decoding: page.body, as: UTF8.self).contains("/api/live"))
        // The login page names the way in, never the token.
        let anonymous = api.respond(to: HTTPRequest(path: "/"))
        #expect(anonymous.status == 401 && !String(decoding: anonymous.body, as: UTF8.self).contains("s3cret"))
    }

    @Test func healthAndMetricsFollowThePipeline() {
        let api = Self.server(token: nil)
        #expect(api.respond(to: HTTPRequest(path: "/api/metrics")).status == 503)
        let report = MetricsReport(
            final: false, uptimeSecs: 1.5,
            components: [ComponentMetrics(id: "numbers", kind: .source, typeName: "counter").snapshot()])
        api.publish(report)
        let metrics = api.respond(to: HTTPRequest(path: "/api/metrics"))
        #expect(metrics.status == 200)
        #expect(
            String(decoding: metrics.body, as: UTF8.self).hasPrefix(
                #"{"type":"metrics","final":false,"uptime_secs":1.5"#))
        let prometheus = String(decoding: api.respond(to: HTTPRequest(path: "/metrics")).body, as: UTF8.self)
        #expect(prometheus.hasPrefix("# sluice report uptime_secs=1.5 final=false\n"))
        #expect(prometheus.contains(#"api_requests_total{path="/api/metrics",code="503"} 1"#))
        #expect(api.respond(to: HTTPRequest(path: "/health")).body == Array(#"{"status":"ok"}"#.utf8) + [10])
        api.markStopping()
        let stopping = api.respond(to: HTTPRequest(path: "/health"))
        #expect(stopping.status == 503 && stopping.body == Array(#"{"status":"stopping"}"#.utf8) + [10])
        #expect(api.respond(to: HTTPRequest(path: "/favicon.ico")).status == 404)
    }

    @Test func theGraphShowsOptionsAsWrittenNeverTheirSecrets() throws {
        let api = Self.server(token: nil)
        let text = String(decoding: api.respond(to: HTTPRequest(path: "/api/pipeline")).body, as: UTF8.self)
        #expect(!text.contains("hunter2"))
        let graph = try JSONReader.parse(text)
        let out = graph["components"]?.arrayValue?.last
        #expect(out?["options"] == ["into": "${SECRET}"])
        #expect(graph["components"]?.arrayValue?[1]["buffer"] == ["when_full": "drop_oldest", "max_events": 50])
        #expect(
            graph["edges"] == [
                ["from": "numbers", "output": nil, "to": "copy"], ["from": "copy", "output": nil, "to": "out"],
            ])
    }

    @Test func tapRequestsAreCheckedWithAMessage() {
        let api = Self.server(token: nil)
        func message(_ query: [String: String]) -> String? {
            guard case .failure(let error) = api.tapRequest(query) else { return nil }
            return error.message
        }
        #expect(message([:]) == "'component' is missing: /api/tap?component=ID")
        #expect(message(["component": "nope"]) == "unknown component 'nope'; the pipeline has: copy, numbers, out")
        #expect(message(["component": "copy.hot"]) == "'copy' has no named outputs")
        #expect(message(["component": "copy", "limit": "0"])?.hasPrefix("'limit' must be a whole number") == true)
        #expect(message(["component": "copy", "rate": "fast"])?.hasPrefix("'rate' must be a number") == true)
        #expect(
            api.tapRequest(["component": "copy", "limit": "7", "rate": "2.5"])
                == .success(APIServer.TapRequest(component: "copy", output: nil, limit: 7, rate: 2.5)))
        #expect(
            api.tapRequest(["component": "out"])
                == .success(APIServer.TapRequest(component: "out", output: nil, limit: 100, rate: 10)))
        #expect(api.admit(HTTPRequest(path: "/api/tap", query: ["component": "nope"]))?.status == 400)
        #expect(api.admit(HTTPRequest(path: "/api/nope"))?.status == 404)
    }

    @Test func graphsInDotAndMermaid() {
        let graph = PipelineGraph(Self.definition)
        #expect(
            graph.dot == """
                digraph pipeline {
                  rankdir=LR;
                  node [fontname="Helvetica", fontsize=11];
                  "numbers" [shape=cds, label="numbers\\ncounter"];
                  "copy" [shape=box, label="copy\\npass"];
                  "out" [shape=folder, label="out\\ncollect"];
                  "numbers" -> "copy" [label="drop_oldest 50"];
                  "copy" -> "out" [label="block 8000"];
                }

                """)
        #expect(
            graph.mermaid == """
                flowchart LR
                  numbers(["numbers<br/>counter"])
                  copy["copy<br/>pass"]
                  out[("out<br/>collect")]
                  numbers -->|"drop_oldest 50"| copy
                  copy -->|"block 8000"| out

                """)
    }
}
