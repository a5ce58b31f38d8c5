import Dispatch
import Foundation
import SluiceCore
import SluiceSync
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The built `sluice` binary run as a child process with real pipes on stdin, stdout and stderr.
final class SluiceProcess: @unchecked Sendable {
    // @unchecked: `process` and the pipes are configured before `start()` and only read afterwards; the
    // collected stderr is behind a Mutex.

    /// The directory of this repository.
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The `sluice` executable built beside the test bundle.
    static let executable: URL = {
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return me.deletingLastPathComponent().appendingPathComponent("sluice")
    }()

    let process = Process()
    let input = Pipe()
    let output = Pipe()
    let errors = Pipe()
    private let collectedErrors = Mutex(Data())
    private let exited = DispatchSemaphore(value: 0)
    private let stderrDone = DispatchSemaphore(value: 0)
    private let stderrArrived = DispatchSemaphore(value: 0)

    /// With `descriptorLimit`, the child runs under that `ulimit -n` (set by a shell that then becomes it, so that
    /// the process id is still the child's).
    init(_ arguments: [String], environment: [String: String] = [:], descriptorLimit: Int? = nil) {
        // A test that closes a pipe early must see EPIPE, not die of SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        if let descriptorLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments =
                ["-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\"", Self.executable.path] + arguments
        } else {
            process.executableURL = Self.executable
            process.arguments = arguments
        }
        process.currentDirectoryURL = Self.repository
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
    }

    /// No child outlives this: a test waiting for output that never comes then fails instead of hanging the run.
    static let lifetimeLimitSecs = 300.0

    /// Set by `scripts/sanitize`: a file where each child's process id is written with its test and arguments, so
    /// that a sanitizer report (named after its process id) leads to the test that started the process.
    static let processLog = ProcessInfo.processInfo.environment["SLUICE_PROCESS_LOG"]

    func start() throws {
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        let pid = process.processIdentifier
        if let path = Self.processLog {
            let arguments = (process.arguments ?? []).joined(separator: " ")
            let line = "\(pid) \(Test.current?.name ?? "-"): sluice \(arguments)\n"
            let file = open(path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
            if file >= 0 {
                _ = line.withCString { write(file, $0, strlen($0)) }
                close(file)
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + Self.lifetimeLimitSecs) { [exited] in
            // Still running after the limit: a test is stuck. (The semaphore is only peeked at, then restored.)
            if exited.wait(timeout: .now()) == .timedOut {
                kill(pid, SIGKILL)
            } else {
                exited.signal()
            }
        }
        let descriptor = errors.fileHandleForReading.fileDescriptor
        Thread.detachNewThread {
            while let data = Self.readChunk(descriptor) {
                self.collectedErrors.locked { $0.append(data) }
                self.stderrArrived.signal()
            }
            self.stderrDone.signal()
        }
    }

    /// Writes `bytes` to the child's stdin on a thread of its own, then closes stdin.
    func feed(_ chunks: @escaping @Sendable (Int) -> Data?) {
        let handle = input.fileHandleForWriting
        Thread.detachNewThread {
            var index = 0
            while let chunk = chunks(index) {
                do { try handle.write(contentsOf: chunk) } catch { break }
                index += 1
            }
            try? handle.close()
        }
    }

    /// Reads whatever stdout has now (waiting for at least one byte), like read(2); nil at the end.
    func readChunk(limit: Int = 1 << 16) -> Data? {
        Self.readChunk(output.fileHandleForReading.fileDescriptor, limit: limit)
    }

    /// One read(2): FileHandle.read(upToCount:) waits for the whole count, which hides small outputs.
    private static func readChunk(_ descriptor: Int32, limit: Int = 1 << 16) -> Data? {
        var buffer = [UInt8](repeating: 0, count: limit)
        while true {
            let count = Glibc.read(descriptor, &buffer, limit)
            if count < 0, errno == EINTR { continue }
            return count > 0 ? Data(buffer[0..<count]) : nil
        }
    }

    /// What stdout has within `waitingMillis` (nil if nothing came, or at the end), like a read(2) with a timeout.
    func readChunkIfAvailable(waitingMillis: Int32) -> Data? {
        var descriptor = pollfd(fd: output.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, waitingMillis) > 0 else { return nil }
        return readChunk()
    }

    /// Reads all of stdout until the child closes it, or for at most `seconds`: then the child is killed (a
    /// pipeline that never ends fails its test instead of hanging it), and what it wrote so far is returned.
    func readAllOutput(seconds: Double = 600) -> Data {
        let deadline = ContinuousClock.now + .seconds(seconds)
        var all = Data()
        var descriptor = pollfd(fd: output.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
        while ContinuousClock.now < deadline {
            guard poll(&descriptor, 1, 1000) > 0 else { continue }
            guard let data = readChunk() else { return all }
            all.append(data)
        }
        killIfRunning()
        return all
    }

    /// Waits at most `seconds` for the child to exit; returns its status, or nil (after killing it) on timeout.
    func waitForExit(seconds: Double = 120) -> Int32? {
        if exited.wait(timeout: .now() + seconds) == .timedOut {
            process.terminate()
            return nil
        }
        _ = stderrDone.wait(timeout: .now() + 5)
        return process.terminationStatus
    }

    /// Waits, at most `seconds`, until stderr contains `text` (`times` times); true if it did.
    func waitForErrorText(_ text: String, times: Int = 1, seconds: Double = 30) -> Bool {
        let deadline = DispatchTime.now() + seconds
        func found() -> Bool { errorText.components(separatedBy: text).count > times }
        while !found() {
            if stderrArrived.wait(timeout: deadline) == .timedOut { return found() }
        }
        return true
    }

    /// CPU seconds (user + system) the process has used so far, from /proc; nil once it is gone.
    var cpuSeconds: Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let afterName = stat.lastIndex(of: ")")
        else { return nil }
        // Fields after the name start at field 3 (state); utime and stime are fields 14 and 15, in clock ticks.
        let fields = stat[stat.index(after: afterName)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Kills the child if it still runs, so that a test that fails half-way leaves nothing behind.
    func killIfRunning() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Everything written to stderr so far.
    var errorText: String { String(decoding: collectedErrors.locked { $0 }, as: UTF8.self) }

    /// Starts `pipeline` and returns the child once it has said which port its server listens on.
    /// `input` feeds stdin (by default it is closed at once).
    static func serving(
        _ pipeline: TemporaryPipeline, scheme: String = "ws", input: @escaping @Sendable (Int) -> Data? = { _ in nil }
    ) throws -> (SluiceProcess, Int) {
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed(input)
        let announcement = "listening on \(scheme)://127.0.0.1:"
        #expect(child.waitForErrorText(announcement))
        let tail = try #require(child.errorText.components(separatedBy: announcement).last)
        let port = try #require(Int(tail.prefix { $0.isNumber }))
        return (child, port)
    }

    /// Runs to completion with `stdin` as input; returns the exit status, stdout and stderr.
    static func run(_ arguments: [String], stdin: String = "", environment: [String: String] = [:]) throws
        -> (status: Int32?, output: String, errors: String)
    {
        let child = SluiceProcess(arguments, environment: environment)
        try child.start()
        let bytes = Data(stdin.utf8)
        child.feed { $0 == 0 ? bytes : nil }
        let output = child.readAllOutput()
        let status = child.waitForExit()
        return (status, String(decoding: output, as: UTF8.self), child.errorText)
    }
}

/// A pipeline file written to a temporary directory, with a metrics file beside it.
struct TemporaryPipeline {
    let directory: URL
    let path: String
    let metricsPath: String

    init(_ yaml: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("pipeline.yaml").path
        metricsPath = directory.appendingPathComponent("metrics.jsonl").path
        try yaml.replacingOccurrences(of: "$METRICS", with: metricsPath).write(
            toFile: path, atomically: true, encoding: .utf8)
    }

    /// A pipeline whose text names files in its own directory: `yaml` is given the directory's path.
    init(inItsDirectory yaml: (String) -> String) throws {
        try self.init("")
        try yaml(directory.path).replacingOccurrences(of: "$METRICS", with: metricsPath).write(
            toFile: path, atomically: true, encoding: .utf8)
    }

    /// Every metrics report written, parsed.
    func reports() throws -> [JSONValue] {
        let text = try String(contentsOfFile: metricsPath, encoding: .utf8)
        return try text.split(separator: "\n").map { try JSONReader.parse(String($0)) }
    }

    /// The final report's component with `id`.
    func finalComponent(_ id: String) throws -> JSONValue? {
        guard let last = try reports().last, last["final"] == .bool(true) else { return nil }
        return Self.component(id, of: last)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    /// The latest report's component `id`, from a running process's metrics file.
    func latest(_ id: String) -> JSONValue? {
        Self.component(id, of: try? reports().last)
    }

    /// Component `id` of `report`.
    static func component(_ id: String, of report: JSONValue?) -> JSONValue? {
        guard case .array(let components)? = report?["components"] else { return nil }
        return components.first { $0["component_id"] == .string(id) }
    }

    /// Waits (bounded) until the latest report of `id` satisfies `condition`.
    func waitForReport(_ id: String, seconds: Double = 60, _ condition: (JSONValue) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let report = latest(id), condition(report) { return true }
            usleep(100_000)
        }
        return false
    }
}

extension JSONValue {
    /// The integer at `path` of nested keys, or nil.
    func int(_ path: String...) -> Int? {
        var value: JSONValue? = self
        for key in path { value = value?[key] }
        if case .int(let number)? = value { return Int(number) }
        return nil
    }

    /// Asserts nothing is in flight, by the ledger every component keeps: received + created = sent + every
    /// discard + folded (created and folded are 0 but for a component that folds events into events of its own,
    /// an aggregate).
    var balances: Bool {
        guard let received = int("received_events_total"), let sent = int("sent_events_total"),
            case .object(let discards)? = self["discarded_events_total"]
        else { return false }
        let dropped = discards.fields.reduce(0) { total, field in
            if case .int(let n) = field.value { return total + Int(n) }
            return total
        }
        let created = int("created_events_total") ?? 0
        let folded = int("folded_events_total") ?? 0
        return received + created == sent + dropped + folded
    }
}

/// True when `scripts/sanitize` runs the tests: sanitized code is 5 to 15 times slower and AddressSanitizer's
/// shadow memory and quarantine inflate RSS, so the few assertions about speed (a rate held, a sink never
/// blocked) and peak memory are not made; everything else is.
let underSanitizer = ProcessInfo.processInfo.environment["SLUICE_SANITIZER"] != nil

/// True when the tests run under ThreadSanitizer (`scripts/sanitize thread`).
let underThreadSanitizer = ProcessInfo.processInfo.environment["SLUICE_SANITIZER"] == "thread"

/// Line `index` of the synthetic input: a sensor-like JSON object of about 100 bytes.
func sensorLine(_ index: Int) -> String {
    #"{"device":"d-\#(index % 1000)","seq":\#(index),"temp":\#(Double(index % 400) / 10),"status":"ok","pad":"abcdefghijklmnopqrstuvwxyz"}"#
}

/// `count` sensor lines in chunks of 1,000 lines, for ``SluiceProcess/feed(_:)``.
func sensorChunks(count: Int) -> @Sendable (Int) -> Data? {
    { chunk in
        let start = chunk * 1000
        guard start < count else { return nil }
        var text = ""
        for index in start..<min(count, start + 1000) { text += sensorLine(index) + "\n" }
        return Data(text.utf8)
    }
}

/// The first of `paths` that exists, for the tools tests need (installed by scripts/install-deps).
func installedTool(_ paths: String...) -> String? {
    paths.first { FileManager.default.isExecutableFile(atPath: $0) }
}
