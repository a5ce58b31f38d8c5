internal import Dispatch
internal import SluiceCore
internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// Reads a file descriptor in large chunks on a thread of its own, up to ``chunksAhead`` chunks ahead of the
/// reader, and can be woken to stop while it waits.
///
/// A blocking `read(2)` on a cooperative thread would take one of the two this machine has; here the wait happens
/// in `poll(2)` on a Dispatch thread, on the descriptor and on a wake pipe that ``wake()`` writes to. Reading
/// ahead lets the next `read(2)` overlap the decoding of the last chunk; at most ``chunksAhead`` chunks wait, so
/// a stalled pipeline still stops reading (and the pipe pushes back on its writer).
///
/// A chunk given back with ``recycle(_:)`` once it is decoded is read into again: a new chunk buffer per read
/// is memory the allocator may have returned to the kernel, which then clears every page of it again on the
/// first write (measured: up to 50 ns of system time per event of a stdin pipeline).
final class DescriptorReader: Sendable {
    /// What one read produced.
    enum Chunk: Sendable {
        /// The first `count` bytes of `bytes` (its storage is the whole chunk, so that it can be read into again).
        case data([UInt8], count: Int)
        /// Nothing arrived before the deadline given to ``read(deadlineNanos:)``.
        case idle
        case end
        case stopped
        case failed(String)
    }

    /// Chunks read but not yet taken, at most.
    static let chunksAhead = 2

    private let fileDescriptor: Int32
    private let chunkBytes: Int
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let queue = DispatchQueue(label: "sluice.stdin")
    /// Free places for chunks read ahead; the reading thread takes one before each read.
    private let room = DispatchSemaphore(value: DescriptorReader.chunksAhead)
    private let state = Mutex(State())

    private struct State {
        var started = false
        var stopping = false
        var ready: [Chunk] = []
        /// The last chunk, once the input ended, stopped or failed: every later take returns it.
        var final: Chunk?
        var taker: CheckedContinuation<Chunk, Never>?
        /// Counts takers, so that a deadline resumes only the read that set it.
        var takerNumber = 0
        /// Chunks given back, to read into again.
        var spares: [[UInt8]] = []
        /// A read while filling a chunk found the end of the input: the next chunk is the end, without reading
        /// again (a terminal gives its end once).
        var endRead = false
    }

    init(fileDescriptor: Int32, chunkBytes: Int) {
        self.fileDescriptor = fileDescriptor
        self.chunkBytes = chunkBytes
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
        Self.widenPipe(fileDescriptor, to: chunkBytes)
    }

    /// Linux's `F_SETPIPE_SZ` (`F_LINUX_SPECIFIC_BASE + 7`), which Swift's Glibc module does not export.
    private static let setPipeSize: Int32 = 1024 + 7

    /// Lets a pipe hold up to a chunk (the kernel's limit for a user is 1 MiB, `/proc/sys/fs/pipe-max-size`), where
    /// it holds 64 KiB: a writer such as `cat` fills a pipe only as fast as it is read, so each read found 64 KiB
    /// however long the reader waited, too few lines to decode on both cores. Not a pipe, or refused: unchanged.
    private static func widenPipe(_ descriptor: Int32, to bytes: Int) {
        #if os(Linux)
            var status = stat()
            guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFIFO else { return }
            _ = fcntl(descriptor, setPipeSize, Int32(clamping: min(bytes, 1 << 20)))
        #endif
    }

    deinit {
        if wakeRead >= 0 { close(wakeRead) }
        if wakeWrite >= 0 { close(wakeWrite) }
    }

    /// The next chunk, waiting until one is read, the input ends, or ``wake()`` is called; with a deadline (in
    /// ``MonotonicClock`` nanoseconds), `.idle` if none of that happens by then. Chunks read before a wake are
    /// still delivered, then `.stopped`.
    func read(deadlineNanos: UInt64? = nil) async -> Chunk {
        let chunk = await withCheckedContinuation { (continuation: CheckedContinuation<Chunk, Never>) in
            let (taken, start, number) = state.locked { state -> (Chunk?, Bool, Int) in
                let start = !state.started
                state.started = true
                if !state.ready.isEmpty { return (state.ready.removeFirst(), start, 0) }
                if let final = state.final { return (final, start, 0) }
                state.taker = continuation
                state.takerNumber += 1
                return (nil, start, state.takerNumber)
            }
            if start { queue.async { self.readAhead() } }
            if let taken {
                room.signal()
                continuation.resume(returning: taken)
            } else if let deadlineNanos {
                // Not on `queue`, whose one thread reads.
                let now = MonotonicClock.nanos()
                let delay = Int(clamping: deadlineNanos > now ? deadlineNanos - now : 0)
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(delay)) {
                    let taker = self.state.locked { state -> CheckedContinuation<Chunk, Never>? in
                        guard state.takerNumber == number, let taker = state.taker else { return nil }
                        state.taker = nil
                        return taker
                    }
                    taker?.resume(returning: .idle)
                }
            }
        }
        ThreadSanitizerHandOff.receive()
        return chunk
    }

    /// Gives back a chunk from ``read(deadlineNanos:)`` that is no longer needed, to be read into again. (Kept only
    /// while it is the only reference to its storage.)
    func recycle(_ chunk: [UInt8]) {
        state.locked { state in
            if state.spares.count <= Self.chunksAhead { state.spares.append(chunk) }
        }
    }

    /// Makes the reading thread stop: a waiting ``read()`` returns `.stopped` once the chunks already read are taken.
    func wake() {
        state.locked { $0.stopping = true }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        room.signal()
    }

    /// The reading thread: reads chunks while there is room for them, until the input ends, fails or is stopped.
    private func readAhead() {
        while true {
            room.wait()
            let chunk = state.locked { $0.stopping } ? .stopped : readNow()
            let final: Bool
            if case .data = chunk { final = false } else { final = true }
            let taker = state.locked { state -> CheckedContinuation<Chunk, Never>? in
                if final { state.final = chunk }
                if let taker = state.taker {
                    state.taker = nil
                    return taker
                }
                if !final { state.ready.append(chunk) }
                return nil
            }
            if let taker {
                room.signal()
                ThreadSanitizerHandOff.send()
                taker.resume(returning: chunk)
            }
            if final { return }
        }
    }

    private func readNow() -> Chunk {
        if state.locked({ $0.endRead }) { return .end }
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
        var endRead = false
        // A spare keeps its whole length; a new chunk is zeroed once, when it is made.
        var bytes = state.locked { $0.spares.popLast() } ?? [UInt8](repeating: 0, count: chunkBytes)
        let got = bytes.withUnsafeMutableBufferPointer { buffer -> Int in
            var got = 0
            // A pipe gives at most what it holds (64 KiB unless widened) a read: while the writer is ahead (a read
            // brought a sixteenth of a chunk or more) and more is there at once, the chunk is filled, so that a
            // piped input is decoded on both cores as a file is (64 KiB is too few lines to share) and crosses in
            // as few hand-offs. What is not there yet is not waited for, and a writer that trickles (small reads)
            // is not read on until a chunk is full: its lines go at once.
            while true {
                let count = Glibc.read(fileDescriptor, buffer.baseAddress! + got, chunkBytes - got)
                if count < 0, errno == EINTR { continue }
                if count < 0 {
                    // After some bytes, they go first; the next read meets the failure again.
                    if got == 0 { failure = errno }
                    return got
                }
                if count == 0 {
                    endRead = got > 0
                    return got
                }
                got += count
                if got == chunkBytes || count < chunkBytes / 16 || !Self.isReadable(fileDescriptor) { return got }
            }
        }
        if endRead { state.locked { $0.endRead = true } }
        if failure != 0 { return .failed("cannot read standard input: \(String(cString: strerror(failure)))") }
        return got == 0 ? .end : .data(bytes, count: got)
    }

    /// True when a read of `descriptor` would not wait.
    private static func isReadable(_ descriptor: Int32) -> Bool {
        var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let count = poll(&ready, 1, 0)
            if count < 0, errno == EINTR { continue }
            return count > 0
        }
    }
}
