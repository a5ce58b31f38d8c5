internal import SluiceAPI
internal import SluiceCore
internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// `sluice top`: the live reports of a running pipeline's API (`/api/live`), redrawn in place once a second in a
/// terminal (like `vector top` or `htop`), or written as plain blocks of lines when standard output is not one.
enum TopCommand {
    static func run(_ api: APIAddress, onStopRequest: (@escaping @Sendable () -> Void) -> Void) async -> ExitCode {
        let interactive = isatty(1) == 1 && isatty(0) == 1
        let feed: APIFeed
        do {
            // In a terminal it waits for the pipeline and survives its restarts; in a pipe it ends with it.
            feed = try APIFeed.open(base: api.base, path: "/api/live", token: api.token, reconnects: interactive)
        } catch {
            Logger.standardError.error("top: \(error)")
            return .usage
        }
        let output = SluiceCommand.standardOutput
        let terminal = interactive ? Terminal() : nil
        let loop = Task {
            var report: JSONValue?
            var status: String?
            var outcome = ExitCode.success
            func draw() async {
                let screen = TopScreen(address: api.base, width: terminal?.columns ?? 80)
                let lines = screen.lines(report: report, status: status)
                if terminal != nil {
                    // Home, each line clearing its rest, then clear below: no flicker and no jumps.
                    let text = "\u{1B}[H" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\n") + "\u{1B}[J"
                    try? await output.write(Array(text.utf8))
                } else {
                    try? await output.write(Array((lines.joined(separator: "\n") + "\n\n").utf8))
                }
            }
            if terminal != nil { await draw() }
            for await event in feed.events {
                switch event {
                case .message(let text):
                    report = try? JSONReader.parse(text)
                    status = nil
                    await draw()
                case .status(let text):
                    status = text
                    if terminal != nil { await draw() }
                case .ended(let reason, let normal):
                    if !normal {
                        Logger.standardError.error("top: \(reason)")
                        outcome = .runtimeFailure
                    }
                }
            }
            return outcome
        }
        let stop: @Sendable () -> Void = { loop.cancel() }
        onStopRequest(stop)
        terminal?.enter(onQuit: stop)
        let outcome = await loop.value
        await feed.close()
        if let terminal {
            try? await output.write(Array(Terminal.leaveSequence.utf8))
            terminal.restore()
        }
        await output.drain()
        return loop.isCancelled ? .success : outcome
    }
}

/// The terminal while `top` runs: keys read one at a time without echo (`q` quits), the alternate screen, and the
/// settings restored at the end.
private final class Terminal: Sendable {
    private let saved: Mutex<termios?> = Mutex(nil)

    static let enterSequence = "\u{1B}[?1049h\u{1B}[?25l"
    static let leaveSequence = "\u{1B}[?25h\u{1B}[?1049l"

    /// The terminal's width in columns.
    var columns: Int {
        var size = winsize()
        return ioctl(1, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 80
    }

    /// Switches to the alternate screen and unbuffered keys; `onQuit` runs on `q`, `Q` or Ctrl-C.
    func enter(onQuit: @escaping @Sendable () -> Void) {
        var settings = termios()
        if tcgetattr(0, &settings) == 0 {
            saved.locked { $0 = settings }
            var raw = settings
            raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG)
            tcsetattr(0, TCSANOW, &raw)
        }
        _ = Self.enterSequence.withCString { write(1, $0, strlen($0)) }
        // A thread of its own blocks in read(2); it ends with the process.
        _ = try? ServiceThread.start {
            var byte: UInt8 = 0
            while read(0, &byte, 1) == 1 {
                if byte == UInt8(ascii: "q") || byte == UInt8(ascii: "Q") || byte == 3 {
                    onQuit()
                    return
                }
            }
        }
    }

    func restore() {
        if var settings = saved.locked({ $0 }) { tcsetattr(0, TCSANOW, &settings) }
    }
}
