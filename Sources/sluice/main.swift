// The `sluice` executable: the only place that touches the process itself (signals, exit).
import SluiceCLI
import SluiceSync

#if canImport(Glibc)
    import Glibc
#endif

/// Ends the process once what stdio holds (`print`'s output) is flushed, without the libraries' exit handlers:
/// exit(3) would run OpenSSL's (libwebsockets initialises it), which frees its locks and sets them to null while a
/// thread that is not ours to join may still be inside OpenSSL, and that thread then crashes on the null lock (seen
/// under TSan, whose own exit handler waits a second for the other threads). Everything Sluice writes is written
/// and accounted for before this; nothing those handlers do is needed.
func endProcess(_ code: Int32) -> Never {
    fflush(nil)
    _exit(code)
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

do {
    try SignalRelay.install()
} catch {
    let message = "sluice: error: \(error)\n"
    _ = message.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    endProcess(ExitCode.runtimeFailure.rawValue)
}

let code = await SluiceCommand.main(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: processEnvironment()
) { stop in
    SignalRelay.actions.locked { $0.stop.append(stop) }
} onReloadRequest: { reload in
    SignalRelay.actions.locked { $0.reload = reload }
}
endProcess(code.rawValue)
