import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The Python WebSocket peer (`Peers/ws_peer.py`) as a child process on 127.0.0.1.
final class WebSocketPeer: @unchecked Sendable {
    // @unchecked: configured in init, then only read; the process object is thread-safe for terminate().

    let process = Process()
    let port: Int
    let recordPath: String

    /// Starts the peer in `mode` with extra `arguments`, waiting (bounded) until it says which port it listens on.
    init(_ mode: String, _ arguments: [String] = [], record: String? = nil) throws {
        recordPath =
            record
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("ws-peer-\(UUID().uuidString).jsonl").path
        let script = SluiceProcess.repository.appendingPathComponent("Tests/SluiceEndToEndTests/Peers/ws_peer.py")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script.path, mode, "--record", recordPath] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        let descriptor = output.fileHandleForReading.fileDescriptor
        var byte: UInt8 = 0
        while Glibc.read(descriptor, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else {
            process.terminate()
            throw PeerError(message: "the peer did not start: '\(text)'")
        }
        self.port = port
    }

    /// Everything the peer recorded, parsed.
    func records() -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: recordPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Waits, at most `seconds`, until the records satisfy `condition`.
    func waitForRecords(seconds: Double = 20, _ condition: ([[String: Any]]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(records()) { return true }
            usleep(20_000)
        }
        return condition(records())
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}

struct PeerError: Error {
    let message: String
}
