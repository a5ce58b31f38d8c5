import Foundation
import SluiceCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The Python client of the HTTP API (`Peers/api_peer.py`, `Peers/dashboard_peer.py`), run once per command.
enum APIPeer {
    /// Runs `script` with `arguments` and returns the JSON it prints; bounded by `seconds`.
    static func run(
        _ arguments: [String], script: String = "api_peer.py", python: String = "/usr/bin/python3",
        seconds: Double = 90
    ) throws -> JSONValue {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments =
            [
                SluiceProcess.repository.appendingPathComponent("Tests/SluiceEndToEndTests/Peers/\(script)").path
            ] + arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { kill(pid, SIGKILL) }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let problems = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw PeerError(
                message: "\(script) \(arguments.first ?? "") failed: \(String(decoding: problems, as: UTF8.self))")
        }
        return try JSONReader.parse(String(decoding: data, as: UTF8.self))
    }
}

/// A running `sluice run` whose pipeline has an `api` section on a free port, and the API's base URL.
struct APIPipeline {
    let child: SluiceProcess
    let pipeline: TemporaryPipeline
    let base: String
    let port: Int

    static let token = "t0ken-\(UUID().uuidString.prefix(8))"

    /// Starts `yaml` (which must contain `api: {listen: 127.0.0.1:0, token: ${SLUICE_TEST_TOKEN}}` or similar)
    /// with the token in its environment, and waits until the API listens.
    init(_ yaml: String, environment: [String: String] = [:]) throws {
        pipeline = try TemporaryPipeline(yaml)
        child = SluiceProcess(
            ["run", pipeline.path], environment: ["SLUICE_TEST_TOKEN": Self.token].merging(environment) { $1 })
        try child.start()
        let announcement = "api: listening on http://127.0.0.1:"
        guard child.waitForErrorText(announcement) else {
            child.killIfRunning()
            throw PeerError(message: "the API did not start: \(child.errorText)")
        }
        let tail = child.errorText.components(separatedBy: announcement).last ?? ""
        port = Int(tail.prefix { $0.isNumber }) ?? 0
        base = "http://127.0.0.1:\(port)"
    }

    var bearer: [String] { ["--header", "Authorization: Bearer \(Self.token)"] }

    func get(_ path: String, headers: [String] = []) throws -> JSONValue {
        try APIPeer.run(["get", base + path] + headers)
    }

    func stop() {
        child.killIfRunning()
        pipeline.remove()
    }
}
