import Foundation
import Testing

@Suite(.blocking)
struct CommandLineEndToEndTests {
    @Test func versionHelpAndList() throws {
        #expect(try SluiceProcess.run(["--version"]).output == "sluice 0.1.0\n")
        let help = try SluiceProcess.run(["--help"])
        #expect(help.status == 0)
        #expect(help.output.hasPrefix("usage: sluice run FILE"))
        let list = try SluiceProcess.run(["list"])
        #expect(list.status == 0)
        for type in ["stdin", "stdout", "file", "blackhole"] {
            #expect(list.output.contains(" \(type) "), "list names \(type)")
        }
    }

    @Test func usageErrorsExit64() throws {
        for arguments in [
            [], ["frobnicate"], ["run"], ["run", "a.yaml", "--metrics-format", "xml"], ["run", "--bogus", "a"],
        ] {
            let result = try SluiceProcess.run(arguments)
            #expect(result.status == 64, "\(arguments)")
            #expect(result.errors.contains("usage: sluice run FILE"))
        }
    }

    @Test func everyExamplePipelineValidates() throws {
        let directory = SluiceProcess.repository.appendingPathComponent("Pipelines")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".json") }.sorted()
        #expect(files.count >= 2)
        for file in files {
            // Pipelines/live-api.yaml asks for its API token from the environment, with no default.
            let result = try SluiceProcess.run(
                ["validate", "Pipelines/\(file)"], environment: ["SLUICE_API_TOKEN": "validate-only"])
            #expect(result.status == 0, "\(file): \(result.errors)")
            #expect(result.output.hasPrefix("Pipelines/\(file): ok"))
            // Every example explains itself and says how to run it.
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            #expect(text.hasPrefix("#"), "\(file) opens with a comment")
            #expect(text.contains("sluice run Pipelines/\(file)") || text.contains("sluice validate"), "\(file)")
        }
    }

    @Test func anInvalidPipelineExits78WithEveryError() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              in:
                type: stdn
            sinks:
              out:
                type: stdout
                inputs: [in]
                encodng: json
            """)
        defer { pipeline.remove() }
        for command in ["validate", "run"] {
            let result = try SluiceProcess.run([command, pipeline.path])
            #expect(result.status == 78)
            #expect(
                result.errors.contains(
                    "\(pipeline.path):3:11: error: unknown source type 'stdn'\n    type: stdn\n          ^\n"
                        + "note: expected one of: file, kafka, simulator, stdin, websocket, websocket_server; did you mean 'stdin'?"
                )
            )
            #expect(
                result.errors.contains(
                    "\(pipeline.path):8:5: error: unknown key 'encodng' in sink 'out'\n    encodng: json\n    ^\n"
                        + "note: expected one of: buffer, encoding, inputs, template, type; did you mean 'encoding'?"))
        }
        let missing = try SluiceProcess.run(["validate", "no-such-file.yaml"])
        #expect(missing.status == 78)
        #expect(missing.errors.contains("no-such-file.yaml: error: cannot read the file: No such file or directory"))
    }

    @Test func metricsFormatsCanBeChosenOnTheCommandLine() throws {
        let prometheus = try SluiceProcess.run(
            [
                "run", "Pipelines/stdin-to-stdout.yaml", "--metrics-format", "prometheus", "--metrics-to", "stdout",
                "--metrics-interval", "0",
            ],
            stdin: "{\"a\":1}\n")
        #expect(prometheus.status == 0)
        #expect(prometheus.output.hasPrefix("{\"a\":1}\n# sluice report"))
        #expect(
            prometheus.output.contains(
                #"component_sent_events_total{component_id="out",component_kind="sink",component_type="stdout"} 1"#))
    }
}
