import SluiceCore
import Testing

@testable import SluiceCLI

/// `sluice top`'s screen, from a report as `/api/live` sends it.
struct TopScreenTests {
    static let report = try! JSONReader.parse(
        #"""
        {"type":"metrics","final":false,"uptime_secs":75.2,"bottleneck":"a-very-long-sink-name",
         "bottleneck_reason":"its input buffer is full (990 of 1000 events)","process":{"max_rss_bytes":20971520},
         "components":[
          {"component_id":"in","component_kind":"source","component_type":"stdin","received_events_total":5,
           "sent_events_total":5,"discarded_events_total":{"parse_error":2,"filtered":0},
           "received_events_per_sec":1234567.0,"sent_events_per_sec":999.4,"buffer":null},
          {"component_id":"a-very-long-sink-name","component_kind":"sink","component_type":"websocket_server",
           "received_events_total":5,"sent_events_total":5,"discarded_events_total":{"buffer_full":12000},
           "received_events_per_sec":12.0,"sent_events_per_sec":12.0,
           "buffer":{"when_full":"drop_oldest","max_events":1000,"events":990,"high_water_events":1000,
                     "blocked_secs_total":0.0},"latency_ms":{"p50":1.25,"p99":17.08}}]}
        """#)

    @Test func rowsFitEightyColumnsAndMarkTheBottleneck() {
        let lines = TopScreen(address: "http://127.0.0.1:8686", width: 80).lines(report: Self.report, status: nil)
        #expect(lines[0] == "sluice top · http://127.0.0.1:8686 · up 1m15s · rss 20 MiB · q quits")
        #expect(lines.allSatisfy { $0.count <= 80 })
        #expect(lines[3] == " in            stdin        1.2M     999         2 -                   -       -")
        #expect(lines[4] == "▶a-very-long-… websocke…      12      12     12.0k oldest 99%       0.0s    17.1")
        #expect(
            lines.suffix(2) == [
                "▶ bottleneck: a-very-long-sink-name", "  its input buffer is full (990 of 1000 events)",
            ])
    }

    @Test func beforeTheFirstReportItSaysWhatItWaitsFor() {
        let lines = TopScreen(address: "http://x:1", width: 80).lines(report: nil, status: "connection refused")
        #expect(lines == ["sluice top · http://x:1 · q quits", "", "connection refused"])
    }
}
