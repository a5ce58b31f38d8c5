internal import Dispatch
internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// Why writing to a file descriptor failed.
public enum OutputError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reader went away (`EPIPE`), as when `sluice run p.yaml | head -1` has read its line.
    case closedByReader
    /// Any other failure, with the system's message.
    case failed(String)

    /// What went wrong, for messages.
    public var description: String {
        switch self {
        case .closedByReader: "the reader closed the output"
        case .failed(let message): message
        }
    }
}

/// Writes whole chunks to a file descriptor, in order, on a thread of its own, so that a slow reader blocks
/// only this writer and never a thread of Swift's cooperative pool (there are two on this machine).
///
/// Several components may share one writer (the stdout sink and metrics on stdout): chunks never interleave,
/// because every chunk is written completely on one serial queue.
public final class OutputWriter: Sendable {
    /// The descriptor written to.
    public let fileDescriptor: Int32
    /// What error messages call it: a path, or standard output.
    private let name: String
    private let ownsDescriptor: Bool
    /// For a regular file: a chunk that fails partway is cut off again, so the file ends on a whole line.
    private let rewindsFailedChunks: Bool
    private let queue: DispatchQueue
    /// Set by the first failure; every later write fails the same way without touching the descriptor.
    private let failure = Mutex<OutputError?>(nil)
    /// Bytes queued by ``writeLater(_:)`` and not written yet, and lines it dropped since the last note about it.
    private let later = Mutex<(pendingBytes: Int, dropped: Int)>((0, 0))

    /// The most bytes ``writeLater(_:)`` keeps waiting before it drops lines.
    static let laterLimitBytes = 1 << 20

    /// Standard error, shared by the logger and metrics written to stderr, so that their lines never interleave.
    public static let standardError = OutputWriter(fileDescriptor: 2, label: "stderr")

    /// Creates a writer for `fileDescriptor`; when `ownsDescriptor` is true, ``close()`` closes it.
    public convenience init(fileDescriptor: Int32, label: String, ownsDescriptor: Bool = false) {
        self.init(fileDescriptor: fileDescriptor, name: label, ownsDescriptor: ownsDescriptor, rewinds: false)
    }

    private init(fileDescriptor: Int32, name: String, ownsDescriptor: Bool, rewinds: Bool) {
        self.fileDescriptor = fileDescriptor
        self.name = name
        self.ownsDescriptor = ownsDescriptor
        self.rewindsFailedChunks = rewinds
        self.queue = DispatchQueue(label: "sluice.output.\(name)")
    }

    /// Opens `path` for writing, creating it if needed, and appending or truncating. The open runs on a Dispatch
    /// thread: a named pipe (FIFO) is not open until a reader opens it too, and waiting for that on one of the two
    /// threads of Swift's cooperative pool held half the pipeline (two such sinks, all of it).
    public static func open(path: String, append: Bool) async throws(OutputError) -> OutputWriter {
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC)
        let opened = await DispatchQueue.global().result { () -> Result<Int32, OutputError> in
            let descriptor = Glibc.open(path, flags, 0o644)
            return descriptor >= 0
                ? .success(descriptor) : .failure(.failed("cannot open '\(path)': \(String(cString: strerror(errno)))"))
        }
        let descriptor = try opened.get()
        return OutputWriter(fileDescriptor: descriptor, name: "'\(path)'", ownsDescriptor: true, rewinds: true)
    }

    /// Writes all of `bytes`, suspending until they are written.
    public func write(_ bytes: [UInt8]) async throws(OutputError) {
        if let failure = await queue.result(of: { self.writeNow(bytes) }) { throw failure }
    }

    /// Queues `line` (whole lines) and returns at once, so that a caller on Swift's cooperative pool never waits
    /// for a reader. While more than 1 MiB waits (nobody reads the output), lines are dropped; the number dropped is
    /// said once writing resumes.
    public func writeLater(_ line: [UInt8]) {
        let accepted = later.locked { later -> Bool in
            guard later.pendingBytes + line.count <= Self.laterLimitBytes else {
                later.dropped += 1
                return false
            }
            later.pendingBytes += line.count
            return true
        }
        guard accepted else { return }
        queue.async {
            _ = self.writeNow(line)
            let dropped = self.later.locked { later -> Int in
                later.pendingBytes -= line.count
                defer { later.dropped = 0 }
                return later.dropped
            }
            if dropped > 0 {
                _ = self.writeNow(
                    Array(
                        "sluice: warning: \(dropped) message lines were dropped: \(self.name) was not being read\n".utf8
                    ))
            }
        }
    }

    /// Waits until everything queued so far is written.
    public func drain() async {
        await queue.result {}
    }

    /// Closes the descriptor if this writer owns it, after every pending write; waits without holding a thread.
    public func close() async {
        guard ownsDescriptor else { return }
        await queue.result { _ = Glibc.close(self.fileDescriptor) }
    }

    /// Runs on the queue: loops over partial writes, `EINTR` and a full non-blocking descriptor. A chunk is whole lines; when a file write fails
    /// partway (a full disk), the part written is cut off again, so no event is ever left half written.
    private func writeNow(_ bytes: [UInt8]) -> OutputError? {
        if let failed = failure.locked({ $0 }) { return failed }
        let chunkStart = rewindsFailedChunks ? lseek(fileDescriptor, 0, SEEK_CUR) : -1
        var error: OutputError?
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fileDescriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written >= 0 {
                    offset += written
                } else if errno == EINTR {
                    continue
                } else if errno == EAGAIN || errno == EWOULDBLOCK {
                    // A descriptor whoever started Sluice left non-blocking (the flag is the open file's, shared
                    // with them, so it stays): wait on this queue until the reader makes room, as a blocking
                    // write would. A broken or closed reader then shows in the next write.
                    var ready = pollfd(fd: fileDescriptor, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&ready, 1, -1)
                    continue
                } else if errno == EPIPE {
                    error = .closedByReader
                    return
                } else {
                    var message = "cannot write \(name): \(String(cString: strerror(errno)))"
                    if offset > 0, chunkStart >= 0, ftruncate(fileDescriptor, chunkStart) == 0 {
                        _ = lseek(fileDescriptor, chunkStart, SEEK_SET)
                        message += " (the part of the last chunk that was written has been cut off again)"
                    }
                    error = .failed(message)
                    return
                }
            }
        }
        if let error { failure.locked { $0 = error } }
        return error
    }
}
