internal import Dispatch
internal import SluiceCore
internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// A file's identity across renames and restarts: a hash of its first line (at most 256 bytes), as Vector's
/// checksum fingerprint. Device and inode alone are reused by the file system after a deletion, and a copy made
/// by copy-truncate rotation has a new inode but the same content.
struct FileFingerprint: Hashable, Sendable {
    let value: UInt64

    static let maxBytes = 256

    /// The fingerprint of a file whose first bytes are `head`; `nil` while its first line is shorter than 256 bytes
    /// and not yet ended (the file cannot be told apart from another that begins the same way yet).
    init?(head: UnsafeRawBufferPointer) {
        let prefix: UnsafeRawBufferPointer
        if let newline = head.firstIndex(of: 0x0A) {
            prefix = UnsafeRawBufferPointer(rebasing: head[..<(newline + 1)])
        } else if head.count >= Self.maxBytes {
            prefix = UnsafeRawBufferPointer(rebasing: head[..<Self.maxBytes])
        } else {
            return nil
        }
        value = StableHash.hash(prefix)
    }

    init?(hex: String) {
        guard let value = UInt64(hex, radix: 16) else { return nil }
        self.value = value
    }

    var hex: String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

/// Where a file's finished lines end, as the checkpoint file records it.
struct FileCheckpoint: Sendable, Equatable {
    var path: String
    var offset: Int64
}

/// The checkpoint file of one `file` source, `<data_dir>/<source id>.checkpoints.json`, with a lock beside it so
/// that two processes never share it. Written whole to a temporary file, synced and renamed over the old one, so a
/// crash leaves the old or the new one, never a mixture.
final class FileCheckpointStore: Sendable {
    let path: String
    private let lockDescriptor: Int32

    /// Opens (creating the directory if needed) and locks the store; throws a message saying what is wrong.
    init(directory: String, sourceID: String) throws(FileSourceError) {
        if mkdir(directory, 0o755) != 0, errno != EEXIST {
            throw FileSourceError("cannot create data_dir '\(directory)': \(String(cString: strerror(errno)))")
        }
        path = directory + "/" + sourceID + ".checkpoints.json"
        let lockPath = directory + "/" + sourceID + ".lock"
        lockDescriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard lockDescriptor >= 0 else {
            throw FileSourceError("cannot open '\(lockPath)' in data_dir: \(String(cString: strerror(errno)))")
        }
        guard flock(lockDescriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(lockDescriptor)
            throw FileSourceError(
                "another process holds '\(lockPath)': two runs of source '\(sourceID)' cannot share a data_dir")
        }
    }

    deinit { close(lockDescriptor) }

    /// The checkpoints written last; empty when there are none. A damaged file is an error, not a silent restart
    /// from scratch (which would read every file again).
    func load() throws(FileSourceError) -> [FileFingerprint: FileCheckpoint] {
        let bytes: [UInt8]
        do {
            bytes = try FileContents.read(path)
        } catch {
            if error.isMissing { return [:] }
            throw FileSourceError("cannot read '\(path)': \(error.message)")
        }
        let damaged = FileSourceError("'\(path)' is damaged; move it away to start again by read_from")
        guard case .object(let root)? = try? JSONReader.parse(bytes), case .array(let files)? = root["files"] else {
            throw damaged
        }
        var checkpoints: [FileFingerprint: FileCheckpoint] = [:]
        for file in files {
            guard case .object(let entry) = file, case .string(let hex)? = entry["fingerprint"],
                let fingerprint = FileFingerprint(hex: hex), case .string(let path)? = entry["path"],
                case .int(let offset)? = entry["offset"], offset >= 0
            else { throw damaged }
            checkpoints[fingerprint] = FileCheckpoint(path: path, offset: offset)
        }
        return checkpoints
    }

    /// Replaces the checkpoint file with `checkpoints`, atomically and durably.
    func save(_ checkpoints: [FileFingerprint: FileCheckpoint]) throws(FileSourceError) {
        let files = checkpoints.sorted { $0.value.path < $1.value.path }.map { fingerprint, checkpoint in
            JSONValue.object([
                "fingerprint": .string(fingerprint.hex), "path": .string(checkpoint.path),
                "offset": .int(checkpoint.offset),
            ])
        }
        let text = JSONWriter.string(.object(["version": 1, "files": .array(files)])) + "\n"
        let temporary = path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw failure("create", temporary) }
        let written = text.utf8CString.withUnsafeBufferPointer { text in
            writeAll(descriptor, UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(text).dropLast()))
        }
        let synced = written && fsync(descriptor) == 0
        close(descriptor)
        guard synced else { throw failure("write", temporary) }
        guard rename(temporary, path) == 0 else { throw failure("rename", temporary) }
        // The rename itself is durable once the directory is synced.
        let directory = open(String(path[..<path.lastIndex(of: "/")!]), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }

    private func failure(_ verb: String, _ file: String) -> FileSourceError {
        FileSourceError("cannot \(verb) checkpoint file '\(file)': \(String(cString: strerror(errno)))")
    }

    private func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var done = 0
        while done < bytes.count {
            let count = write(descriptor, bytes.baseAddress! + done, bytes.count - done)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return false }
            done += count
        }
        return true
    }
}

/// The checkpoints of one `file` source while it runs: the reading task records where files' lines end once their
/// events are sent, and a checkpoint task commits those whose events are all finished and saves them.
final class FileCheckpointKeeper: Sendable {
    /// The checkpoints found at the start.
    let loaded: [FileFingerprint: FileCheckpoint]
    /// Saved to by one task at a time: the checkpoint task, which `run` awaits before `pipelineEnded` saves.
    private let store: FileCheckpointStore
    /// Where saves run: a save waits for the disk (`fsync`), which a busy or remote disk can make last seconds, and
    /// on the cooperative pool that held one of its threads (with a source per core, all of them) meanwhile.
    private let saving = DispatchQueue(label: "sluice.file.checkpoints")
    private let state: Mutex<State>

    private struct State {
        /// Where files' lines ended after each send, until that send is finished.
        var waiting = PendingPositions<FileFingerprint, FileCheckpoint>()
        var committed: [FileFingerprint: FileCheckpoint]
        var saved: [FileFingerprint: FileCheckpoint]
        var failures = 0
    }

    init(store: FileCheckpointStore) throws(FileSourceError) {
        loaded = try store.load()
        self.store = store
        state = Mutex(State(committed: loaded, saved: loaded))
    }

    /// Notes where the files' lines end now that everything read so far was sent.
    func record(_ offsets: [FileFingerprint: FileCheckpoint], madeBefore: UInt64) {
        state.locked { $0.waiting.record(offsets, madeBefore: madeBefore) }
    }

    /// Commits what is finished (every event made before `finishedBefore`) and saves it if it changed; a failed
    /// save is reported (to `log`) and tried again next time.
    func commit(finishedBefore: UInt64, log: Logger?) async {
        let changed = state.locked { state -> [FileFingerprint: FileCheckpoint]? in
            state.committed.merge(state.waiting.takeFinished(before: finishedBefore)) { $1 }
            return state.committed == state.saved ? nil : state.committed
        }
        guard let changed else { return }
        let store = store
        let saved = await saving.result { Result { () throws(FileSourceError) in try store.save(changed) } }
        do {
            try saved.get()
            state.locked { $0.saved = changed }
        } catch {
            log?.error("\(error); the checkpoint is saved again in a second")
        }
    }
}

/// What ends a `file` source: its checkpoint store cannot be used.
struct FileSourceError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
