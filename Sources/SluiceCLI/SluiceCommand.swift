internal import SluiceAPI
package import SluiceCore
internal import SluiceSinks
internal import SluiceSources
internal import SluiceTransforms

#if canImport(Glibc)
    internal import Glibc
#endif

/// The `sluice` command: parses arguments, loads pipeline files and runs them.
///
/// The executable wraps it: it owns the process (signals, exit), while this stays testable as a library.
public enum SluiceCommand {
    /// The version `sluice --version` prints.
    public static let version = "0.1.0"

    /// Every component type Sluice knows, with standard input and output given to the `stdin` source and the
    /// `stdout` sink.
    package static func catalog(standardOutput: OutputWriter) -> ComponentCatalog {
        ComponentCatalog(
            SourceCatalog.all(standardInput: 0) + TransformCatalog.all + SinkCatalog.all(standardOutput: standardOutput)
        )
    }

    /// The writer for standard output: `stdout` sinks and metrics written to stdout share it, so their chunks never
    /// interleave.
    package static let standardOutput: OutputWriter = OutputWriter(fileDescriptor: 1, label: "stdout")

    /// Runs the command line `arguments` (without the program name) and returns the exit code, once everything
    /// written to standard error has been written.
    ///
    /// `onStopRequest` is given a function to call when the user asks to stop (the first SIGINT or SIGTERM), and
    /// `onReloadRequest` one to call when the user asks `run` to read its file again (SIGHUP).
    public static func main(
        arguments: [String], environment: [String: String],
        onStopRequest: (@escaping @Sendable () -> Void) -> Void,
        onReloadRequest: (@escaping @Sendable () -> Void) -> Void = { _ in }
    ) async -> ExitCode {
        let code = await perform(
            arguments: arguments, environment: environment, onStopRequest: onStopRequest,
            onReloadRequest: onReloadRequest)
        await OutputWriter.standardError.drain()
        return code
    }

    private static func perform(
        arguments: [String], environment: [String: String],
        onStopRequest: (@escaping @Sendable () -> Void) -> Void,
        onReloadRequest: (@escaping @Sendable () -> Void) -> Void
    ) async -> ExitCode {
        let command: Command
        do {
            command = try parseCommandLine(arguments, environment: environment)
        } catch {
            printError("sluice: error: \(error.message)\n\(usage)")
            return .usage
        }
        switch command {
        case .help:
            print(usage)
            return .success
        case .version:
            print("sluice \(version)")
            return .success
        case .list:
            print(listing())
            return .success
        case .validate(let files):
            return validate(files, environment: environment)
        case .test(let files):
            return PipelineTestCommand.run(files, environment: environment)
        case .graph(let file, let format):
            guard let definition = load(file, environment: environment) else { return .invalidConfig }
            let graph = PipelineGraph(definition)
            print(format == .dot ? graph.dot : graph.mermaid, terminator: "")
            return .success
        case .top(let api):
            return await TopCommand.run(api, onStopRequest: onStopRequest)
        case .tap(let component, let api, let limit, let rate):
            return await tap(component, api: api, limit: limit, rate: rate, onStopRequest: onStopRequest)
        case .run(let file, let overrides, let watch):
            return await run(
                file, overrides: overrides, watch: watch, environment: environment, onStopRequest: onStopRequest,
                onReloadRequest: onReloadRequest)
        }
    }

    // MARK: - list

    /// The component table: kind, type and summary, one line each.
    static func listing() -> String {
        let entries = catalog(standardOutput: standardOutput).types
        let width = entries.map(\.typeName.count).max() ?? 0
        return entries.map { entry in
            let padding = String(repeating: " ", count: width - entry.typeName.count)
            return "\(entry.kind.rawValue.padding(to: 9))  \(entry.typeName)\(padding)  \(entry.summary)"
        }.joined(separator: "\n")
    }

    // MARK: - validate

    private static func validate(_ files: [String], environment: [String: String]) -> ExitCode {
        var worst = ExitCode.success
        for file in files {
            guard let definition = load(file, environment: environment) else {
                if worst == .success { worst = .invalidConfig }
                continue
            }
            let counts = ComponentKind.allCases.map { kind in
                let count = definition.components.filter { $0.kind == kind }.count
                return "\(count) \(kind.rawValue)\(count == 1 ? "" : "s")"
            }
            print("\(file): ok (\(counts.joined(separator: ", ")))")
        }
        return worst
    }

    /// Reads and validates `file`, printing its diagnostics to standard error.
    static func load(_ file: String, environment: [String: String]) -> PipelineDefinition? {
        loadWithLines(file, environment: environment)?.definition
    }

    /// ``load(_:environment:)``, with the file's lines for messages about it; `nil` when it cannot be read or is
    /// not valid.
    static func loadWithLines(_ file: String, environment: [String: String])
        -> (definition: PipelineDefinition, lines: [Substring])?
    {
        guard let text = readFile(file) else {
            printError("\(file): error: cannot read the file: \(String(cString: strerror(errno)))")
            return nil
        }
        let result = PipelineLoader(catalog: catalog(standardOutput: standardOutput), environment: environment).load(
            text)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        for diagnostic in result.diagnostics {
            printError(diagnostic.rendered(path: file, sourceLines: lines))
        }
        return result.definition.map { ($0, lines) }
    }

    // MARK: - run

    private static func run(
        _ file: String, overrides: MetricsOverrides, watch: Bool, environment: [String: String],
        onStopRequest: (@escaping @Sendable () -> Void) -> Void,
        onReloadRequest: (@escaping @Sendable () -> Void) -> Void
    ) async -> ExitCode {
        guard var definition = load(file, environment: environment) else { return .invalidConfig }
        if let format = overrides.format.flatMap(MetricsSettings.Format.init(rawValue:)) {
            definition.metrics.format = format
        }
        if let destination = overrides.destination { definition.metrics.destination = .init(destination) }
        if let interval = overrides.intervalSecs { definition.metrics.intervalSecs = interval }

        let metricsWriter: OutputWriter
        switch definition.metrics.destination {
        case .stdout: metricsWriter = standardOutput
        case .stderr: metricsWriter = OutputWriter.standardError
        case .file(let path):
            do {
                metricsWriter = try await OutputWriter.open(path: path, append: false)
            } catch {
                printError("sluice: error: metrics: \(error)")
                return .runtimeFailure
            }
        }
        let runner = PipelineRunner(definition: definition, log: .standardError)
        let api = definition.api.map { APIServer(settings: $0, definition: definition, metrics: runner.metrics) }
        let reporter = MetricsReporter(
            settings: definition.metrics, currentComponents: { runner.metrics },
            currentConsumers: { runner.consumers },
            writer: metricsWriter, observer: api.map { api -> @Sendable (MetricsReport) -> Void in api.publish },
            reloads: { runner.reloadStatus })
        if let api, let settings = definition.api {
            do {
                let urls = try await api.start()
                Logger.standardError.info("api: listening on \(urls.joined(separator: ", "))")
            } catch {
                printError("sluice: error: api: \(error) (api.listen is \(settings.host):\(settings.port))")
                await metricsWriter.close()
                return .runtimeFailure
            }
            api.publish(reporter.peekReport())
        }
        onStopRequest {
            api?.markStopping()
            runner.stop()
        }
        let reloader = Reloader(file: file, environment: environment, runner: runner) { definition in
            api?.pipelineChanged(definition, metrics: runner.metrics)
        }
        onReloadRequest { reloader.reload(because: "SIGHUP") }
        let watcher = watch ? Task { await reloader.watch() } : nil
        let outcome = await runner.run(reporter: reporter)
        watcher?.cancel()
        await api?.stop()
        await metricsWriter.close()
        return outcome.failures.isEmpty ? .success : .runtimeFailure
    }

    // MARK: - tap

    /// Prints what `/api/tap` sends, one event per line, until `limit` events came, the pipeline stopped, or the
    /// user did.
    private static func tap(
        _ component: String, api: APIAddress, limit: Int, rate: Double,
        onStopRequest: (@escaping @Sendable () -> Void) -> Void
    ) async -> ExitCode {
        let feed: APIFeed
        do {
            feed = try APIFeed.open(
                base: api.base, path: "/api/tap?component=\(component)&limit=\(limit)&rate=\(rate)", token: api.token,
                reconnects: false)
        } catch {
            printError("sluice: error: tap: \(error)")
            return .usage
        }
        let loop = Task {
            var received = 0
            for await event in feed.events {
                switch event {
                case .message(let text):
                    received += 1
                    do {
                        try await standardOutput.write(Array((text + "\n").utf8))
                    } catch {
                        return ExitCode.success  // `sluice tap x | head`: the reader has what it wanted.
                    }
                    if received == limit { return .success }
                case .status:
                    break
                case .ended(let reason, let normal):
                    if normal { return .success }
                    printError("sluice: error: tap: \(reason)")
                    return .runtimeFailure
                }
            }
            return .success
        }
        onStopRequest { loop.cancel() }
        let code = await loop.value
        await feed.close()
        await standardOutput.drain()
        return code
    }

    // MARK: - Helpers

    private static func readFile(_ path: String) -> String? {
        (try? FileContents.read(path)).map { String(decoding: $0, as: UTF8.self) }
    }

    static func printError(_ text: String) {
        Logger.standardError.write(text)
    }
}

extension String {
    fileprivate func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
