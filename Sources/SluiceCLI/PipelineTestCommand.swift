internal import SluiceCore

/// `sluice test FILE...`: runs the `tests:` of each pipeline file and prints each test with its result; a failure
/// is printed like a config error, at the check that failed, with the events and where the test's events went.
enum PipelineTestCommand {
    /// The most events a failure shows; the rest are counted.
    static let shownEvents = 10

    /// Exit 0 when every test passed, 1 when one failed or a file has none, 78 when a file is invalid.
    static func run(_ files: [String], environment: [String: String]) -> ExitCode {
        var passed = 0
        var failed = 0
        var invalid = false
        var withoutTests: [String] = []
        for file in files {
            guard let (definition, lines) = SluiceCommand.loadWithLines(file, environment: environment) else {
                invalid = true
                continue
            }
            guard !definition.tests.isEmpty else {
                print("\(file): no tests")
                withoutTests.append(file)
                continue
            }
            let runner = PipelineTestRunner(definition: definition)
            for test in definition.tests {
                let result = runner.run(test)
                print("\(file):\(test.mark.line): test '\(test.name)' ... \(result.passed ? "ok" : "FAILED")")
                if result.passed {
                    passed += 1
                    continue
                }
                failed += 1
                for failure in result.failures { print(render(failure, of: test, path: file, lines: lines)) }
            }
        }
        let total = passed + failed
        print(
            "\(total) test\(total == 1 ? "" : "s") in \(files.count) file\(files.count == 1 ? "" : "s"): "
                + "\(passed) passed, \(failed) failed"
                + (withoutTests.isEmpty
                    ? "" : ", \(withoutTests.count) file\(withoutTests.count == 1 ? "" : "s") without tests"))
        if invalid { return .invalidConfig }
        return failed == 0 && withoutTests.isEmpty ? .success : .runtimeFailure
    }

    /// A failure as a diagnostic at its check: the events the transform emitted (with the condition each did not
    /// meet), then where the test's events went.
    static func render(
        _ failure: PipelineTestResult.Failure, of test: PipelineTest, path: String, lines: [Substring]
    ) -> String {
        var notes: [String] = []
        for (index, event) in failure.events.prefix(shownEvents).enumerated() {
            if index < failure.unmet.count {
                let unmet = failure.unmet[index]
                notes.append("emitted \(event): '\(unmet.condition)' \(unmet.reason) (line \(unmet.mark.line))")
            } else {
                notes.append("emitted \(event)")
            }
        }
        if failure.events.count > shownEvents {
            notes.append("and \(failure.events.count - shownEvents) more events")
        }
        notes += failure.notes
        let diagnostic = Diagnostic(.error, "test '\(test.name)': \(failure.message)", at: failure.mark, notes: notes)
        return diagnostic.rendered(path: path, sourceLines: lines)
    }
}
