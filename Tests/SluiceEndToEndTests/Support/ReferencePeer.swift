import Foundation
import Testing

/// An independent computation in Python (`Peers/<script>`, standard library only), run once: `input` on its
/// standard input, what it prints returned.
enum ReferencePeer {
    static func run(_ script: String, _ arguments: [String], input: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments =
            [SluiceProcess.repository.appendingPathComponent("Tests/SluiceEndToEndTests/Peers/\(script)").path]
            + arguments
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        let data = Data(input.utf8)
        Thread.detachNewThread {
            try? stdin.fileHandleForWriting.write(contentsOf: data)
            try? stdin.fileHandleForWriting.close()
        }
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(script) \(arguments.first ?? "")")
        return String(decoding: output, as: UTF8.self)
    }
}
