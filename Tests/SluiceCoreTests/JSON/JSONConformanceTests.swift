import Foundation
import SluiceCore
import Testing

/// Where JSONTestSuite (github.com/nst/JSONTestSuite) is: the folder that holds `test_parsing`, named by the
/// environment variable `JSON_TEST_SUITE`, or else `../shared/testdata/JSONTestSuite` beside this clone, where the
/// development machines keep it. It is not part of the repository: where it is absent the tests that need it are
/// skipped with the reason, and CI (`.ci/run`) insists on it.
enum JSONTestSuiteCorpus {
    static let root: URL = {
        if let path = ProcessInfo.processInfo.environment["JSON_TEST_SUITE"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("shared/testdata/JSONTestSuite")
    }()

    /// The folder of parsing cases.
    static let directory = root.appendingPathComponent("test_parsing")

    /// The `.json` files of `test_parsing`, sorted; empty when the corpus is absent.
    static let files: [String] =
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
        .filter { $0.hasSuffix(".json") }.sorted()

    static var isPresent: Bool { !files.isEmpty }

    /// Why the corpus tests did not run.
    static var absence: Comment {
        "JSONTestSuite is not at \(directory.path); set JSON_TEST_SUITE to the folder holding test_parsing"
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
    }
}

/// Runs every file of JSONTestSuite's `test_parsing`: `y_` must parse, `n_` must fail with an error, `i_` may do
/// either; none may crash or hang.
@Suite(.enabled(if: JSONTestSuiteCorpus.isPresent, JSONTestSuiteCorpus.absence))
struct JSONConformanceTests {
    @Test func theCorpusIsComplete() {
        let files = JSONTestSuiteCorpus.files
        #expect(files.count > 300)
        #expect(files.contains { $0.hasPrefix("y_") } && files.contains { $0.hasPrefix("n_") })
    }

    @Test(arguments: JSONTestSuiteCorpus.files)
    func file(_ name: String) throws {
        let bytes = try JSONTestSuiteCorpus.bytes(name)
        let result = Result { try JSONReader.parse(bytes) }
        switch name.first {
        case "y":
            let value = try result.get()
            // What we accept must survive our own writer and reader unchanged.
            var written: [UInt8] = []
            JSONWriter.write(value, to: &written)
            #expect(try JSONReader.parse(written) == value, "\(name) did not round-trip")
        case "n":
            #expect(throws: JSONError.self, "\(name) must be rejected") { try result.get() }
        default:
            break
        }
    }
}
