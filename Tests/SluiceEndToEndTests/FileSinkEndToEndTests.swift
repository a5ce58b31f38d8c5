import Foundation
import SluiceCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `file` sink when the disk fills up: it reports the error, counts what it could not write, exits non-zero
/// and never leaves half an event in the file.
@Suite(.serialized, .blocking)
struct FileSinkEndToEndTests {
    /// A 256 KiB tmpfs made for the test (the tests run as root in CI), or nil where mounting is not allowed.
    static func smallDisk() -> URL? {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "sluice-full-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        guard mount("tmpfs", directory.path, "tmpfs", 0, "size=256k") == 0 else {
            try? FileManager.default.removeItem(at: directory)
            return nil
        }
        return directory
    }

    @Test func aFullDiskIsReportedCountedAndLeavesOnlyWholeEvents() throws {
        // Where no tmpfs can be mounted, /dev/full stands in: every write fails with ENOSPC.
        let disk = Self.smallDisk()
        defer {
            if let disk {
                umount(disk.path)
                try? FileManager.default.removeItem(at: disk)
            }
        }
        let path = disk?.appendingPathComponent("out.jsonl").path ?? "/dev/full"
        let pipeline = try TemporaryPipeline(
            """
            sources:
              in: {type: stdin}
            sinks:
              out: {type: file, inputs: [in], path: "\(path)"}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed(sensorChunks(count: 20_000))
        _ = child.readAllOutput()
        #expect(child.waitForExit() == 1)
        #expect(child.errorText.contains("sink 'out': cannot write '\(path)': No space left on device"))

        let sink = try #require(try pipeline.finalComponent("out"))
        let sent = try #require(sink.int("sent_events_total"))
        let received = try #require(sink.int("received_events_total"))
        #expect(sink.int("discarded_events_total", "error") == received - sent)
        #expect(received > sent, "some events could not be written")
        #expect(sink.balances)
        #expect(try pipeline.finalComponent("in")?.balances == true)
        if disk != nil {
            // Everything in the file is whole events, exactly those counted as sent, in order.
            let content = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(content.isEmpty || content.last == UInt8(ascii: "\n"), "the file ends with a whole line")
            let lines = String(decoding: content, as: UTF8.self).split(separator: "\n").map(String.init)
            #expect(lines.count == sent)
            #expect(sent > 1000, "a quarter MiB holds more than 1,000 events")
            #expect(lines == (0..<lines.count).map(sensorLine))
        }
    }
}
