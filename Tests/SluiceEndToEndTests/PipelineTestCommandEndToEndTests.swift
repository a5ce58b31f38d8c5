import Foundation
import Testing

/// `sluice test`: the tests inside pipeline files, run by the real binary.
@Suite(.blocking)
struct PipelineTestCommandEndToEndTests {
    /// Every example pipeline carries tests, and they pass (CI runs the same command).
    @Test func everyExamplePipelinePassesItsTests() throws {
        let directory = SluiceProcess.repository.appendingPathComponent("Pipelines")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".yaml") }.sorted().map { "Pipelines/\($0)" }
        let result = try SluiceProcess.run(["test"] + files, environment: ["SLUICE_API_TOKEN": "test-only"])
        #expect(result.status == 0, "\(result.output)\(result.errors)")
        for file in files { #expect(result.output.contains("\(file):"), "\(file) has tests") }
        let summary = try #require(result.output.split(separator: "\n").last)
        #expect(summary.hasSuffix(" in \(files.count) files: \(summary.split(separator: " ")[0]) passed, 0 failed"))
        #expect(!result.output.contains("FAILED"))
    }

    @Test func aFailingTestExits1WithTheCheckTheEventsAndTheirPath() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              in: {type: stdin}
            transforms:
              warm:
                type: filter
                inputs: [in]
                condition: .temperature > 20
              enrich:
                type: map
                inputs: [warm]
                set: {temperature_f: .temperature * 9 / 5 + 32}
            sinks:
              out: {type: stdout, inputs: [enrich]}
            tests:
              - name: passes
                inputs: [{insert_at: warm, events: [{temperature: 30}]}]
                outputs: [{extract_from: enrich, conditions: [.temperature_f == 86]}]
              - name: fails
                inputs: [{insert_at: warm, events: [{temperature: 30}, {temperature: 10}]}]
                outputs: [{extract_from: enrich, conditions: [.temperature_f == 87]}]
            """)
        defer { pipeline.remove() }
        let result = try SluiceProcess.run(["test", pipeline.path])
        #expect(result.status == 1)
        #expect(result.output.contains("\(pipeline.path):15: test 'passes' ... ok\n"))
        #expect(
            result.output.contains(
                """
                \(pipeline.path):18: test 'fails' ... FAILED
                \(pipeline.path):20:30: error: test 'fails': no event from 'enrich' met every condition
                    outputs: [{extract_from: enrich, conditions: [.temperature_f == 87]}]
                                             ^
                note: emitted {"temperature":30,"temperature_f":86.0}: '.temperature_f == 87' is false (line 20)
                note: 'warm': received 2, sent 1, discarded filtered 1
                note: 'enrich': received 1, sent 1

                """), "\(result.output)")
        #expect(result.output.hasSuffix("2 tests in 1 file: 1 passed, 1 failed\n"))
    }

    @Test func anInvalidFileExits78AndAFileWithoutTestsFails() throws {
        let invalid = try TemporaryPipeline(
            """
            sources: {in: {type: stdin}}
            sinks: {out: {type: stdout, inputs: [in]}}
            tests:
              - name: t
                inputs: [{insert_at: nowhere, events: [{}]}]
                no_output_from: [out]
            """)
        defer { invalid.remove() }
        let bad = try SluiceProcess.run(["test", invalid.path])
        #expect(bad.status == 78)
        #expect(bad.errors.contains("\(invalid.path):5:26: error: insert_at 'nowhere' is not a component"))
        let validate = try SluiceProcess.run(["validate", invalid.path])
        #expect(validate.status == 78, "validate checks the tests section too")

        let untested = try SluiceProcess.run(["test", "Pipelines/stdin-to-stdout.yaml", "Pipelines/sensor-demo.yaml"])
        #expect(untested.status == 0)
        let bare = try TemporaryPipeline("sources: {in: {type: stdin}}\nsinks: {out: {type: stdout, inputs: [in]}}\n")
        defer { bare.remove() }
        let none = try SluiceProcess.run(["test", bare.path])
        #expect(none.status == 1)
        #expect(none.output.contains("\(bare.path): no tests\n"))
        #expect(none.output.hasSuffix("0 tests in 1 file: 0 passed, 0 failed, 1 file without tests\n"))
    }
}
