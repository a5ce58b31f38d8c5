import Dispatch
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Sluice's messages go to standard error from the writer's own thread: a standard error that nobody reads (a full
/// pipe) never stalls the pipeline, whose tasks share the two threads of Swift's cooperative pool, and the lines
/// waiting for it are bounded.
@Suite(.blocking)
struct StandardErrorEndToEndTests {
    @Test func aStandardErrorNobodyReadsNeverStallsThePipeline() throws {
        // A stderr pipe of one page, already full: the first warning cannot be written until the test reads it.
        let errors = Pipe()
        let errorWrite = errors.fileHandleForWriting.fileDescriptor
        _ = fcntl(errorWrite, 1031, 4096)  // F_SETPIPE_SZ, which Glibc does not export to Swift
        let flags = fcntl(errorWrite, F_GETFL)
        _ = fcntl(errorWrite, F_SETFL, flags | O_NONBLOCK)
        var filler = [UInt8](repeating: UInt8(ascii: "#"), count: 1 << 16)
        while write(errorWrite, &filler, filler.count) > 0 {}
        _ = fcntl(errorWrite, F_SETFL, flags)

        let input = Pipe()
        let output = Pipe()
        let process = Process()
        process.executableURL = SluiceProcess.executable
        process.arguments = [
            "run", "Pipelines/stdin-to-stdout.yaml", "--metrics-interval", "0", "--metrics-to", "/dev/null",
        ]
        process.currentDirectoryURL = SluiceProcess.repository
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

        // 20,000 good lines with a bad one (a warning) every 100 lines, on a thread of its own.
        let good = 20_000
        let writer = input.fileHandleForWriting
        Thread.detachNewThread {
            for chunk in 0..<(good / 100) {
                var text = ""
                for index in 0..<100 { text += #"{"n":\#(chunk * 100 + index)}"# + "\n" }
                text += "not json\n"
                try? writer.write(contentsOf: Data(text.utf8))
            }
            try? writer.close()
        }
        // Every good line comes out while stderr stays full.
        let lines = Mutex(0)
        let allOut = DispatchSemaphore(value: 0)
        let outputDescriptor = output.fileHandleForReading.fileDescriptor
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = read(outputDescriptor, &buffer, buffer.count)
                if count <= 0 { break }
                let newlines = buffer[0..<count].reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
                if lines.withLock({
                    $0 += newlines
                    return $0
                }) >= good {
                    allOut.signal()
                }
            }
        }
        #expect(allOut.wait(timeout: .now() + 30) == .success, "stdout got \(lines.withLock { $0 }) of \(good) lines")
        // Now read stderr: the filler, then the warnings, and the run ends.
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(text.contains("line 101 is not valid JSON"))
    }

    /// Standard output and error left non-blocking by whoever started Sluice (the flag belongs to the open pipe,
    /// which Sluice shares with them): a full pipe makes Sluice wait for its reader, as a blocking one does. It had
    /// failed the sink (`cannot write stdout: Resource temporarily unavailable`, every event of the batch counted
    /// under error, some of them written).
    @Test func nonBlockingOutputsAreWaitedFor() throws {
        let output = Pipe()
        let errors = Pipe()
        for descriptor in [output.fileHandleForWriting.fileDescriptor, errors.fileHandleForWriting.fileDescriptor] {
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        }
        // Standard error full from the start: Sluice's first message finds no room.
        var filler = [UInt8](repeating: UInt8(ascii: "#"), count: 1 << 16)
        while write(errors.fileHandleForWriting.fileDescriptor, &filler, filler.count) > 0 {}
        let process = Process()
        process.executableURL = SluiceProcess.executable
        // 100,000 readings (18 MB), 100 of which fail the map (a warning): stdout fills too.
        process.arguments = ["run", "/dev/stdin", "--metrics-interval", "0", "--metrics-to", "stderr"]
        process.currentDirectoryURL = SluiceProcess.repository
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        try input.fileHandleForWriting.write(
            contentsOf: Data(
                """
                sources:
                  fleet: {type: simulator, devices: 50, rate: max, count: 100000, seed: 3}
                transforms:
                  check: {type: map, inputs: [fleet], set: {ratio: ".battery / (.seq % 1000)"}}
                sinks:
                  out: {type: stdout, inputs: [check]}
                """.utf8))
        try input.fileHandleForWriting.close()
        // Nothing read for a while: both pipes are full and Sluice waits.
        usleep(500_000)
        let errorText = Mutex(Data())
        let errorsRead = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let data = errors.fileHandleForReading.readDataToEndOfFile()
            errorText.withLock { $0 = data }
            errorsRead.signal()
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(errorsRead.wait(timeout: .now() + 30) == .success)
        let text = String(decoding: errorText.withLock { $0 }, as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(text.suffix(500))")
        #expect(data.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) } == 100_000 - 100)
        #expect(!text.contains("Resource temporarily unavailable"), "\(text.suffix(500))")
        #expect(text.contains("division by zero"), "\(text.prefix(500))")
    }
}
