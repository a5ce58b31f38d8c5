// The `sluice` executable: the only place that touches the process itself (signals, exit).
import SluiceCLI
import SluiceSync

#if canImport(Glibc)
    import Glibc
#endif

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

do {
    try SignalRelay.install()
} catch {
    let message = "sluice: error: \(error)\n"
    _ = message.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(ExitCode.runtimeFailure.rawValue)
}

let code = await SluiceCommand.main(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: processEnvironment()
) { stop in
    SignalRelay.actions.locked { $0.stop.append(stop) }
} onReloadRequest: { reload in
    SignalRelay.actions.locked { $0.reload = reload }
}
exit(code.rawValue)
