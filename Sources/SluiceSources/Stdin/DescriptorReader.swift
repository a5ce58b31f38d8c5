internal import Dispatch
internal import SluiceSync

#if canImport(Glibc)
    internal import Glibc
#endif

/// Reads a file descriptor in large chunks on a thread of its own, and can be woken to stop while it waits.
///
/// A blocking `read(2)` on a cooperative thread would take one of the two this machine has; here the wait happens
/// in `poll(2)` on a Dispatch thread, on the descriptor and on a wake pipe that ``wake()`` writes to.
final class DescriptorReader: Sendable {
    /// What one read produced.
    enum Chunk: Sendable {
        case data([UInt8])
        case end
        case stopped
        case failed(String)
    }

    private let fileDescriptor: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let queue = DispatchQueue(label: "sluice.stdin")

    init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            // A wake that nobody reads must never block the waker.
            _ = fcntl(ends[1], F_SETFL, O_NONBLOCK)
        } else {
            ends = [-1, -1]
        }
        wakeRead = ends[0]
        wakeWrite = ends[1]
    }

    deinit {
        if wakeRead >= 0 { close(wakeRead) }
        if wakeWrite >= 0 { close(wakeWrite) }
    }

    /// Reads up to `limit` bytes, waiting until some arrive, the input ends, or ``wake()`` is called.
    func read(limit: Int) async -> Chunk {
        let chunk = await withCheckedContinuation { continuation in
            queue.async {
                let chunk = self.readNow(limit: limit)
                ThreadSanitizerHandOff.send()
                continuation.resume(returning: chunk)
            }
        }
        ThreadSanitizerHandOff.receive()
        return chunk
    }

    /// Makes a waiting ``read(limit:)`` (and every later one) return `.stopped`.
    func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private func readNow(limit: Int) -> Chunk {
        var descriptors = [
            pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return .failed("poll failed: \(String(cString: strerror(errno)))")
            }
            if descriptors[1].revents != 0 { return .stopped }
            if descriptors[0].revents != 0 { break }
        }
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: limit) { buffer, count in
            while true {
                let got = Glibc.read(fileDescriptor, buffer.baseAddress, limit)
                if got < 0, errno == EINTR { continue }
                if got < 0 { failure = errno }
                count = max(0, got)
                return
            }
        }
        if failure != 0 { return .failed("cannot read standard input: \(String(cString: strerror(failure)))") }
        return bytes.isEmpty ? .end : .data(bytes)
    }
}
