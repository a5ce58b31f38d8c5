import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The Python Kafka peer (`Peers/kafka_peer.py`): librdkafka's mock cluster on 127.0.0.1 ports, with a producer and
/// checking consumers of its own, driven by one command at a time.
final class KafkaPeer: @unchecked Sendable {
    // @unchecked: configured in init; commands are sent by one test at a time.

    let process = Process()
    /// `host:port,...` of the cluster's brokers.
    let brokers: String
    private let commands = Pipe()
    private let answers = Pipe()
    /// The peer's stderr, to say why it ended when it ends mid-test (librdkafka's mock cluster runs in it).
    private let errors = FileManager.default.temporaryDirectory.appendingPathComponent(
        "sluice-kafka-peer-\(UUID().uuidString).err")

    /// Starts the peer, waiting (bounded by the peer's own start) until it names its brokers; a `controllable` one
    /// can take its brokers down and up (`ask("down")`, `ask("up")`).
    init(pad: Int = 0, controllable: Bool = false) throws {
        let script = SluiceProcess.repository.appendingPathComponent("Tests/SluiceEndToEndTests/Peers/kafka_peer.py")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script.path, "--pad", String(pad)] + (controllable ? ["--controllable"] : [])
        process.standardInput = commands
        process.standardOutput = answers
        guard FileManager.default.createFile(atPath: errors.path, contents: nil) else {
            throw PeerError(message: "cannot make \(errors.path) for the Kafka peer's stderr")
        }
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
        let line = Self.readLine(answers.fileHandleForReading.fileDescriptor)
        guard line.hasPrefix("BROKERS ") else {
            process.terminate()
            throw PeerError(message: "the Kafka peer did not start: '\(line)'")
        }
        brokers = String(line.dropFirst(8))
    }

    /// Sends `command` and returns the peer's one-line JSON answer.
    @discardableResult
    func ask(_ command: String) throws -> [String: Any] {
        try commands.fileHandleForWriting.write(contentsOf: Data((command + "\n").utf8))
        let line = Self.readLine(answers.fileHandleForReading.fileDescriptor)
        guard !line.isEmpty else {
            // The peer ended: its exit status and the end of its stderr say why.
            process.waitUntilExit()
            let stderr = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            throw PeerError(
                message: "the Kafka peer ended (status \(process.terminationStatus), "
                    + "\(process.terminationReason == .uncaughtSignal ? "signal" : "exit")) during '\(command)'; "
                    + "its stderr ends: \(stderr.suffix(2000))")
        }
        guard let answer = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw PeerError(message: "the Kafka peer answered '\(line)' to '\(command)'")
        }
        return answer
    }

    private static func readLine(_ descriptor: Int32) -> String {
        var line = Data()
        var byte: UInt8 = 0
        while Glibc.read(descriptor, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        return String(decoding: line, as: UTF8.self)
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: errors)
    }

    deinit { stop() }
}
