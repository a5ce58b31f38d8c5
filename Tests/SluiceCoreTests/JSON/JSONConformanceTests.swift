import Foundation
import SluiceCore
import Testing

/// Runs every file of JSONTestSuite's `test_parsing`: `y_` must parse, `n_` must fail with an error, `i_` may do
/// either; none may crash or hang.
struct JSONConformanceTests {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("shared/testdata/JSONTestSuite/test_parsing")

    static func files() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
    }

    @Test func theCorpusIsPresent() throws {
        let files = try Self.files()
        #expect(files.count > 300)
        #expect(files.contains { $0.hasPrefix("y_") } && files.contains { $0.hasPrefix("n_") })
    }

    @Test(arguments: try files())
    func file(_ name: String) throws {
        let bytes = try [UInt8](Data(contentsOf: Self.directory.appendingPathComponent(name)))
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
