// The `sluice` executable: the only place that touches the process itself (signals, exit).
import Dispatch
import SluiceCLI
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The first SIGINT or SIGTERM asks the pipeline to stop and drain; a second one exits at once with 130.
func installSignalHandlers(onFirst stop: @escaping @Sendable () -> Void) -> [any DispatchSourceSignal] {
    let received = Atomic<Int>(0)
    return [SIGINT, SIGTERM].map { number in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler {
            if received.add(1, ordering: .relaxed).newValue == 1 {
                stop()
            } else {
                exit(ExitCode.interrupted.rawValue)
            }
        }
        source.resume()
        return source
    }
}

func processEnvironment() -> [String: String] {
    var result: [String: String] = [:]
    var entry = environ
    while let pointer = entry.pointee {
        let text = String(cString: pointer)
        if let equals = text.firstIndex(of: "=") {
            result[String(text[..<equals])] = String(text[text.index(after: equals)...])
        }
        entry += 1
    }
    return result
}

// A closed stdout must end the run through EPIPE, not kill the process before the final report.
signal(SIGPIPE, SIG_IGN)
// SIGHUP reloads the pipeline file (`run`); before the handler is installed, and for other commands, it must not kill
// a long run.
signal(SIGHUP, SIG_IGN)

/// Every SIGHUP asks for a reload.
func installReloadHandler(_ reload: @escaping @Sendable () -> Void) -> any DispatchSourceSignal {
    let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
    source.setEventHandler { reload() }
    source.resume()
    return source
}

nonisolated(unsafe) var signalSources: [any DispatchSourceSignal] = []
let code = await SluiceCommand.main(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: processEnvironment()
) { stop in
    signalSources += installSignalHandlers(onFirst: stop)
} onReloadRequest: { reload in
    signalSources.append(installReloadHandler(reload))
}
exit(code.rawValue)
