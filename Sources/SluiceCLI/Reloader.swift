internal import Dispatch
internal import SluiceCore

#if canImport(Glibc)
    internal import Glibc
#endif

/// Reads the pipeline file again when asked (SIGHUP, or a change `--watch` saw) and applies it to the running
/// pipeline (``PipelineRunner/reload(_:)``). An invalid file changes nothing: its errors are printed as
/// `sluice validate` prints them. Reloads run one at a time, in the order asked for.
final class Reloader: Sendable {
    private let file: String
    private let environment: [String: String]
    private let runner: PipelineRunner
    private let applied: @Sendable (PipelineDefinition) -> Void
    private let queue = DispatchQueue(label: "sluice.reload")

    /// Reloads `file` into `runner`; `applied` is told each definition a reload applied.
    init(
        file: String, environment: [String: String], runner: PipelineRunner,
        applied: @escaping @Sendable (PipelineDefinition) -> Void
    ) {
        self.file = file
        self.environment = environment
        self.runner = runner
        self.applied = applied
    }

    /// Reloads soon, on the reloader's own queue; `reason` says what asked for it.
    func reload(because reason: String) {
        queue.async { [self] in reloadNow(because: reason) }
    }

    private func reloadNow(because reason: String) {
        let log = Logger.standardError
        guard let definition = SluiceCommand.load(file, environment: environment) else {
            runner.recordInvalidReload("\(file) is not valid; the running pipeline is unchanged")
            log.error("reload (\(reason)): \(file) is not valid; the running pipeline is unchanged")
            return
        }
        let reload = runner.reload(definition)
        if reload.result == .applied { applied(definition) }
        switch reload.result {
        case .applied, .unchanged: log.info("reload (\(reason)): \(reload.result.rawValue): \(reload.message)")
        case .rejected, .invalid: log.warning("reload (\(reason)): \(reload.result.rawValue): \(reload.message)")
        }
    }

    /// Reloads whenever the file changes (its modification time, size or inode: an editor that writes a new file
    /// and renames it over the old one is seen too), looking once a second until the task is cancelled.
    func watch() async {
        var last = Self.signature(of: file)
        while !Task.isCancelled {
            do { try await Task.sleep(for: .seconds(1)) } catch { return }
            let now = Self.signature(of: file)
            // A file that vanished for a moment (mid-rename) is not a change yet.
            guard let now, now != last else { continue }
            last = now
            reload(because: "\(file) changed")
        }
    }

    private struct Signature: Equatable {
        let inode: UInt
        let size: Int
        let modifiedNanos: Int
    }

    private static func signature(of path: String) -> Signature? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Signature(
            inode: UInt(info.st_ino), size: Int(info.st_size),
            modifiedNanos: Int(info.st_mtim.tv_sec) * 1_000_000_000 + Int(info.st_mtim.tv_nsec))
    }
}
