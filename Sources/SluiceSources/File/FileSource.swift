internal import SluiceCore
internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// Follows the files `include` matches, like `tail -F` over many files, keeping where each one's finished lines
/// end in a checkpoint file so that a restart (after a crash too) resumes there.
///
/// One task polls: it reads every file with new bytes (1 MiB at a time, files renamed or deleted away first,
/// to their end), then waits up to 100 ms; the globs are matched again every `glob_interval_ms`. Files are told
/// apart by device and inode while open and by a fingerprint of their first line across rotations and restarts:
/// a rename keeps the descriptor reading the old file to its end while the new one starts at 0, a copy-truncate
/// is seen as a size below the offset or a changed first line (read from 0 again), and its copy, having the old
/// fingerprint, resumes where the old file was left.
///
/// A checkpoint records a line only once every event made from it is finished (``SourceContext/finishedBefore``):
/// written by the sinks, or discarded on purpose. It is written at most once a second and after the pipeline
/// drained, so a crash repeats at most what was finished in the last second and loses nothing.
///
/// When a reload gives it new options, it stops at a line boundary and hands the next instance how far it read
/// each file and its checkpoints (kept in one place when `data_dir` is the same): the new instance reads on from
/// there, through the new globs and options, and no line is read twice or skipped.
final class FileSource: Source {
    let config: FileSourceConfig
    /// The checkpoints and what is finished, handed from `run` to `pipelineEnded`.
    private let keeper = Mutex<(FileCheckpointKeeper, finishedBefore: @Sendable () -> UInt64)?>(nil)

    static let chunkBytes = 1 << 20
    private static let pollMillis: Int64 = 100
    private static let checkpointInterval = Duration.seconds(1)

    /// Where an instance stopped, for the one that replaces it.
    struct Place: Sendable {
        /// How far each file (by fingerprint) was read, up to its last whole line.
        let readThrough: [FileFingerprint: Int64]
        let keeper: FileCheckpointKeeper?
        let dataDirectory: String?
    }

    init(config: FileSourceConfig) {
        self.config = config
    }

    func run(_ context: SourceContext) async throws {
        let place = context.handOver.take(Place.self)
        let keeper =
            try place.flatMap { $0.dataDirectory == config.dataDirectory ? $0.keeper : nil }
            ?? config.dataDirectory.map { directory throws(FileSourceError) in
                try FileCheckpointKeeper(store: FileCheckpointStore(directory: directory, sourceID: context.id))
            }
        self.keeper.locked { $0 = keeper.map { ($0, context.finishedBefore) } }
        var tailer = Tailer(
            config: config, context: context, checkpoints: keeper?.loaded ?? [:],
            readThrough: place?.readThrough ?? [:])
        let figures = Mutex<[String: FileFigures]>([:])
        let rotations = Atomic<Int>(0)
        let waiting = Atomic<Int>(0)
        let multiline = MultilineCounters()
        let hasMultiline = config.multiline != nil
        context.metrics.provideDetails {
            var files = JSONObject()
            for (path, file) in figures.locked({ $0 }).sorted(by: { $0.key < $1.key }) { files[path] = file.json }
            var details: JSONObject = [
                "files": .object(files), "rotations_total": .int(Int64(rotations.load(ordering: .relaxed))),
                "files_waiting": .int(Int64(waiting.load(ordering: .relaxed))),
            ]
            if hasMultiline, case .object(let counts)? = multiline.details["multiline"] {
                details["multiline"] = .object(counts)
            }
            return details
        }
        // Its own task, so that checkpoints go on while the source waits for room downstream.
        let checkpointer = keeper.map { keeper in
            Task {
                while (try? await Task.sleep(for: Self.checkpointInterval)) != nil {
                    await keeper.commit(finishedBefore: context.finishedBefore(), log: context.log)
                }
            }
        }
        func publish() {
            let totals = tailer.multilineTotals
            multiline.update(cuts: totals.cuts, joined: totals.joined)
            rotations.store(tailer.rotations, ordering: .relaxed)
            waiting.store(tailer.waitingFiles, ordering: .relaxed)
            figures.locked { $0 = tailer.figures }
        }
        var nextScan = Int64.min
        var firstScan = true
        while !context.stop.isStopped, !Task.isCancelled {
            let now = WallClock.nowMillis()
            if now >= nextScan {
                tailer.scan(firstScan: firstScan)
                firstScan = false
                nextScan = now + Int64(config.globIntervalMillis)
            }
            var round = tailer.readRound()
            await context.output.send(batches: round.takeBatches())
            keeper?.record(round.offsets, madeBefore: MonotonicClock.nanos())
            publish()
            if !round.progressed {
                let wake = min(nextScan, now + Self.pollMillis, tailer.multilineDeadlineMillis ?? .max)
                if wake > now { try? await Task.sleep(for: .milliseconds(wake - now)) }
            }
        }
        // Stopping ends at a line boundary; an open multi-line event is complete as far as it goes.
        var last = tailer.flushAll()
        await context.output.send(batches: last.takeBatches())
        keeper?.record(last.offsets, madeBefore: MonotonicClock.nanos())
        publish()
        tailer.closeAll()
        checkpointer?.cancel()
        await checkpointer?.value
        if context.handOver.isWanted {
            // The next instance commits from now on; one with another data_dir starts its own checkpoints, so
            // what is finished so far is committed here.
            let keeper = self.keeper.locked { $0.take() }?.0
            await keeper?.commit(finishedBefore: context.finishedBefore(), log: context.log)
            context.handOver.leave(
                Place(readThrough: tailer.readThrough, keeper: keeper, dataDirectory: config.dataDirectory))
        }
    }

    /// After the drain every line sent is finished, unless a component failed (then what was finished before it)
    /// or a sink could not deliver some events.
    func pipelineEnded() async {
        guard let (keeper, finishedBefore) = keeper.locked({ $0.take() }) else { return }
        await keeper.commit(finishedBefore: finishedBefore(), log: nil)
    }
}

/// The files being followed, and the reading of them.
struct Tailer {
    let config: FileSourceConfig
    let context: SourceContext
    /// Where each known file's finished lines end, as loaded.
    let checkpoints: [FileFingerprint: FileCheckpoint]
    private var files: [TailedFile] = []
    /// How far each fingerprint has been read in this run (files closed included), so that a copy resumes; after
    /// ``flushAll()``, up to the last whole line of each open file.
    private(set) var readThrough: [FileFingerprint: Int64]
    private var closedFigures: [String: FileFigures] = [:]
    /// Where every read lands, reused (a new array for each read was zeroed and, at this size, mapped afresh), as
    /// large as the largest read so far: a slowly growing log keeps a small one.
    private var chunk: [UInt8] = []
    private var closedMultiline = (cuts: 0, joined: 0)
    /// Renames and truncations seen, over every file.
    private(set) var rotations = 0
    /// Files that matched but could not be opened at the last scan.
    private var unopened: Set<FileIdentity> = []
    /// Matching files not opened at the last scan because the process's descriptors are nearly all in use
    /// (`files_waiting`).
    private(set) var waitingFiles = 0
    /// Files that waited at the first scan: `read_from: end` applies to them when they are opened.
    private var presentAtStart: Set<FileIdentity> = []
    /// Descriptors kept free for the rest of the process: sockets, checkpoints, libdispatch's /proc reads.
    static let reservedDescriptors = 256
    /// The process's descriptor limit (`ulimit -n`) and the lowest descriptor number a file may be given.
    private let descriptorLimit: Int
    private let descriptorCeiling: Int32
    /// The JSON scanners every file's decoder uses: files are read one at a time, on this task.
    private let scanners = LineDecoder.makeScanners()

    /// Follows the files `config` matches; each known one resumes where `readThrough` (a replaced instance's
    /// reading) or else `checkpoints` (a previous run's) says.
    init(
        config: FileSourceConfig, context: SourceContext, checkpoints: [FileFingerprint: FileCheckpoint],
        readThrough: [FileFingerprint: Int64]
    ) {
        self.config = config
        self.context = context
        self.checkpoints = checkpoints
        self.readThrough = readThrough
        var limit = rlimit()
        descriptorLimit =
            getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 ? Int(clamping: limit.rlim_cur) : 1024
        descriptorCeiling = Int32(clamping: max(16, descriptorLimit - Self.reservedDescriptors))
    }

    /// What one round produced: batches to send, where the files' finished lines now end, and whether anything
    /// was read (when not, the source waits a little).
    struct Round {
        var batches: [[Event]] = []
        var offsets: [FileFingerprint: FileCheckpoint] = [:]
        var progressed = false

        /// The batches, given up by the round so that each is let go of as it is sent.
        mutating func takeBatches() -> [[Event]] {
            defer { batches = [] }
            return batches
        }
    }

    // MARK: - Finding files

    /// Matches the globs: opens files not seen before, notes renames, and marks files no longer matched.
    mutating func scan(firstScan: Bool) {
        var seen: Set<Int> = []
        var stillUnopened: Set<FileIdentity> = []
        defer { unopened = stillUnopened }
        // Matching files left unopened for want of descriptors.
        var waiting = 0
        defer {
            if waiting > 0, waitingFiles == 0 {
                context.log.warning(
                    "\(context.id): \(waiting) matching files wait to be opened: \(files.count) are open, and the "
                        + "process may open \(descriptorLimit) descriptors (ulimit -n), \(Self.reservedDescriptors) "
                        + "of them kept for the rest of Sluice; they are opened as others close")
            }
            waitingFiles = waiting
        }
        // By device and inode: a directory of thousands of logs is scanned every `glob_interval_ms`.
        var opened: [FileIdentity: Int] = [:]
        for index in files.indices { opened[files[index].identity] = index }
        for path in matchedPaths() {
            var info = stat()
            guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            let identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
            if let index = opened[identity] {
                if files[index].path != path, !seen.contains(index) {
                    // Renamed (rotated): the same file under a new name; reading goes on.
                    files[index].rotations += 1
                    rotations += 1
                    closedFigures[files[index].path] = nil
                    files[index].path = path
                }
                seen.insert(index)
                continue
            }
            /// Leaves the file for a later scan, when descriptors are free again.
            func wait() {
                waiting += 1
                if firstScan { presentAtStart.insert(identity) }
            }
            guard waiting == 0 else {
                wait()
                continue
            }
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            // The lowest free number is handed out: at this one, every descriptor below it is in use. A process
            // out of descriptors fails wherever it next needs one (libdispatch stops the process when it cannot
            // open a thread's /proc entry), so the last ones are left to the rest of Sluice.
            if descriptor >= descriptorCeiling {
                Glibc.close(descriptor)
                wait()
                continue
            }
            guard descriptor >= 0 else {
                // Said once, not at every scan, while the same file stays unreadable.
                if unopened.insert(identity).inserted {
                    context.log.warning(
                        "\(context.id): cannot open '\(path)': \(String(cString: strerror(errno))); "
                            + "trying again every \(config.globIntervalMillis) ms")
                }
                stillUnopened.insert(identity)
                continue
            }
            var file = TailedFile(
                path: path, identity: identity, descriptor: descriptor, offset: 0,
                splitter: LineSplitter(maxLineBytes: config.maxLineBytes),
                decoder: LineDecoder(
                    decoding: config.decoding, multiline: config.multiline, sourceID: "\(context.id): \(path)",
                    log: context.log, scanners: scanners))
            file.size = Int64(info.st_size)
            // Read from the end only for files there at the start: a file that appears later is new content.
            let wasThere = firstScan || presentAtStart.remove(identity) != nil
            file.offset = wasThere && config.readFrom == .end ? file.size : 0
            files.append(file)
            seen.insert(files.count - 1)
        }
        let now = WallClock.nowMillis()
        for index in files.indices {
            if seen.contains(index) {
                files[index].unmatchedSinceMillis = nil
            } else if files[index].unmatchedSinceMillis == nil {
                files[index].unmatchedSinceMillis = now
            }
        }
    }

    private func matchedPaths() -> [String] {
        var paths: [String] = []
        var listed: Set<String> = []
        for pattern in config.include {
            var found = glob_t()
            defer { globfree(&found) }
            guard glob(pattern, 0, nil, &found) == 0 else { continue }
            for index in 0..<Int(found.gl_pathc) {
                guard let cString = found.gl_pathv[index] else { continue }
                let path = String(cString: cString)
                let name = path.split(separator: "/").last.map(String.init) ?? path
                let excluded = config.exclude.contains { pattern in
                    fnmatch(pattern, pattern.contains("/") ? path : name, 0) == 0
                }
                if !excluded, listed.insert(path).inserted { paths.append(path) }
            }
        }
        return paths
    }

    // MARK: - Reading

    /// How long a file gone from the globs must have stopped growing before it is closed.
    static let closeGraceMillis: Int64 = 1_000

    /// Reads up to one chunk from every file with new bytes: files no longer matched first (a rotated file is
    /// read to its end before its successor), then the others.
    mutating func readRound() -> Round {
        var round = Round()
        let order = files.indices.sorted { !files[$0].matched && files[$1].matched }
        var finished: [Int] = []
        let now = WallClock.nowMillis()
        /// Gone from the globs and quiet for the grace period: done.
        func isDone(_ index: Int) -> Bool {
            files[index].unmatchedSinceMillis.map { now - $0 >= Self.closeGraceMillis } ?? false
        }
        for index in order {
            if !files[index].identify() {
                if isDone(index) { finished.append(index) }
                continue
            }
            let fingerprint = files[index].fingerprint!
            if !startIfNew(index, fingerprint) { continue }
            let before = files[index].safeOffset
            if readChunk(index, into: &round) {
                round.progressed = true
                if !files[index].matched { files[index].unmatchedSinceMillis = now }
            } else if isDone(index) {
                // At the end of a file that was rotated or deleted away: its last line needs no newline.
                finish(index, into: &round)
                finished.append(index)
            }
            flushIfDue(index, into: &round)
            // A truncated file has new content: its old fingerprint keeps where it was left (see readChunk).
            guard files[index].fingerprint == fingerprint else { continue }
            if files[index].safeOffset != before {
                round.offsets[fingerprint] = FileCheckpoint(path: files[index].path, offset: files[index].safeOffset)
            }
            readThrough[fingerprint] = files[index].offset
        }
        for index in finished.sorted(by: >) { close(index) }
        return round
    }

    /// Once a file's first line is known, where reading starts: a checkpoint or an earlier reading of the same
    /// content (a copy made by copy-truncate) wins. False while another open file has the same fingerprint.
    private mutating func startIfNew(_ index: Int, _ fingerprint: FileFingerprint) -> Bool {
        guard files[index].bytesRead == 0, files[index].splitter.pendingBytes == 0 else { return true }
        if files.indices.contains(where: { $0 != index && files[$0].fingerprint == fingerprint && $0 < index }) {
            return false
        }
        guard let offset = readThrough[fingerprint] ?? checkpoints[fingerprint]?.offset else { return true }
        // A file shorter than where its first line's file was left is not that file as it was: it was truncated
        // and written again since (while Sluice was stopped), or it is a new file that starts with the same line
        // (a header). Its content is new; taken as a truncation it was truncated again every round, read nothing
        // and kept a core busy.
        if let size = files[index].currentSize(), size < offset {
            context.log.warning(
                "\(context.id): '\(files[index].path)' begins as a file read to byte \(offset) before, but holds "
                    + "\(size) bytes; reading it from its start")
            return true
        }
        files[index].offset = offset
        return true
    }

    /// Reads the next chunk of one file and decodes its lines; false when there was nothing new.
    private mutating func readChunk(_ index: Int, into round: inout Round) -> Bool {
        guard let size = files[index].currentSize() else { return false }
        files[index].size = size
        // Truncated in place (copy-truncate): what was read stays read; the new content starts at 0. A writer may
        // have written past the old offset again before this look, so new bytes also have the first line checked.
        if size < files[index].offset
            || (size > files[index].offset && files[index].currentFingerprint() != files[index].fingerprint)
        {
            // A partly read last line is left to the copy, which resumes where it begins; an open multi-line event
            // is complete as far as it goes.
            let resumeAt = files[index].offset - Int64(files[index].splitter.pendingBytes)
            files[index].splitter = LineSplitter(maxLineBytes: config.maxLineBytes)
            add([files[index].decoder.flushMultiline()], from: index, to: &round)
            if let fingerprint = files[index].fingerprint {
                readThrough[fingerprint] = resumeAt
                round.offsets[fingerprint] = FileCheckpoint(path: files[index].path, offset: resumeAt)
            }
            files[index].rotations += 1
            rotations += 1
            files[index].offset = 0
            files[index].fingerprint = nil
            return true
        }
        guard size > files[index].offset else { return false }
        let wanted = min(FileSource.chunkBytes, Int(size - files[index].offset))
        if chunk.count < wanted { chunk = [UInt8](repeating: 0, count: wanted) }
        let count = chunk.withUnsafeMutableBytes {
            pread(files[index].descriptor, $0.baseAddress, wanted, off_t(files[index].offset))
        }
        guard count > 0 else { return false }
        files[index].offset += Int64(count)
        files[index].bytesRead += Int64(count)
        let batches = chunk.withUnsafeBufferPointer { bytes in
            let bytes = UnsafeBufferPointer(rebasing: bytes[..<count])
            return files[index].decode(bytes)
        }
        add(batches, from: index, to: &round)
        return true
    }

    /// Emits a partial last line and an open multi-line event of a file that ended.
    private mutating func finish(_ index: Int, into round: inout Round) {
        add(files[index].decodeEnd(), from: index, to: &round)
    }

    /// Emits an open multi-line event whose timeout passed.
    private mutating func flushIfDue(_ index: Int, into round: inout Round) {
        guard let due = files[index].decoder.multiline?.deadlineNanos, due <= MonotonicClock.nanos() else { return }
        add([files[index].decoder.flushMultiline()], from: index, to: &round)
    }

    /// Adds a file's events to the round, each given the file's path with `path_field`, and counts them.
    private mutating func add(_ batches: [[Event]], from index: Int, to round: inout Round) {
        var batches = batches
        if let field = config.pathField {
            let path = JSONValue.string(files[index].path)
            for batch in batches.indices {
                for event in batches[batch].indices { try? batches[batch][event].set(field, to: path) }
            }
        }
        round.batches.append(contentsOf: batches)
        countDecoded(index)
    }

    private mutating func countDecoded(_ index: Int) {
        context.metrics.recordReceived(files[index].decoder.takeReceived())
        context.metrics.recordDiscarded(files[index].decoder.takeDiscards())
    }

    /// Ends the run: every open multi-line event is emitted; partial lines are left for the next run.
    mutating func flushAll() -> Round {
        var round = Round()
        for index in files.indices {
            add([files[index].decoder.flushMultiline()], from: index, to: &round)
            if let fingerprint = files[index].fingerprint {
                round.offsets[fingerprint] = FileCheckpoint(path: files[index].path, offset: files[index].safeOffset)
                readThrough[fingerprint] = files[index].safeOffset
            }
        }
        return round
    }

    private mutating func close(_ index: Int) {
        let file = files.remove(at: index)
        closedFigures[file.path] = figures(of: file)
        closedMultiline.cuts += file.decoder.multiline?.cuts ?? 0
        closedMultiline.joined += file.decoder.multiline?.joinedLines ?? 0
        var decoder = file.decoder
        decoder.finish()
        Glibc.close(file.descriptor)
    }

    mutating func closeAll() {
        while !files.isEmpty { close(files.count - 1) }
    }

    // MARK: - Telemetry

    /// The earliest time an open multi-line event is due, in epoch milliseconds.
    var multilineDeadlineMillis: Int64? {
        let now = MonotonicClock.nanos()
        return files.compactMap(\.decoder.multiline?.deadlineNanos).min().map {
            WallClock.nowMillis() + Int64(($0 > now ? $0 - now : 0) / 1_000_000) + 1
        }
    }

    var multilineTotals: (cuts: Int, joined: Int) {
        files.reduce(closedMultiline) { totals, file in
            (
                totals.cuts + (file.decoder.multiline?.cuts ?? 0),
                totals.joined + (file.decoder.multiline?.joinedLines ?? 0)
            )
        }
    }

    var figures: [String: FileFigures] {
        var all = closedFigures
        for file in files { all[file.path] = figures(of: file) }
        return all
    }

    private func figures(of file: TailedFile) -> FileFigures {
        FileFigures(bytesRead: file.bytesRead, offset: file.offset, size: file.size, rotations: file.rotations)
    }
}
