import Dispatch
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

    /// A `file` sink whose path is a named pipe waits for a reader to open it, as `cmd > fifo` does, without holding
    /// the rest of the pipeline: the open waits on a Dispatch thread. On one of the two threads of Swift's
    /// cooperative pool, two such sinks had stopped everything, stdout and the metrics reports included.
    @Test func fileSinksWaitingForAReaderHoldNothingElse() throws {
        let pipeline = try TemporaryPipeline(inItsDirectory: { directory in
            """
            sources:
              readings: {type: simulator, devices: 5, rate: 1000, count: 300, seed: 9}
            sinks:
              first: {type: file, inputs: [readings], path: "\(directory)/first.fifo"}
              second: {type: file, inputs: [readings], path: "\(directory)/second.fifo"}
              out: {type: stdout, inputs: [readings]}
            metrics: {interval_secs: 1, to: "$METRICS", format: json}
            """
        })
        let directory = pipeline.directory.path
        defer { pipeline.remove() }
        for name in ["first", "second"] { #expect(mkfifo(directory + "/\(name).fifo", 0o644) == 0) }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        defer { child.killIfRunning() }
        // Every reading reaches stdout, and reports are written, while nobody reads the pipes.
        var lines = 0
        let deadline = Date().addingTimeInterval(30)
        while lines < 300, Date() < deadline {
            guard let chunk = child.readChunkIfAvailable(waitingMillis: 500) else { continue }
            lines += chunk.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
        }
        #expect(lines == 300)
        #expect(pipeline.waitForReport("out") { $0.int("sent_events_total") == 300 })
        #expect(child.process.isRunning, "the file sinks still wait")
        // Readers come: each pipe gets every reading, and the run ends.
        let readers = [directory + "/first.fifo", directory + "/second.fifo"].map(PipeReader.init)
        #expect(child.waitForExit() == 0)
        for reader in readers {
            #expect(reader.done.wait(timeout: .now() + 30) == .success)
            #expect(reader.data.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) } == 300)
        }
    }
}

/// Reads a named pipe to its end on a thread of its own.
private final class PipeReader: @unchecked Sendable {
    // @unchecked: `data` is written by the reading thread before it signals `done`, and read only after a wait on it.
    var data = Data()
    let done = DispatchSemaphore(value: 0)

    init(_ path: String) {
        Thread.detachNewThread {
            self.data = FileHandle(forReadingAtPath: path)?.readDataToEndOfFile() ?? Data()
            self.done.signal()
        }
    }
}
