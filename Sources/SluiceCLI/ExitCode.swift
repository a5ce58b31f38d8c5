/// The process exit codes, as in `sysexits.h` where one fits.
public enum ExitCode: Int32, Sendable {
    /// The run or check succeeded.
    case success = 0
    /// A component failed at run time.
    case runtimeFailure = 1
    /// The command line was wrong (`EX_USAGE`).
    case usage = 64
    /// A pipeline file is invalid (`EX_CONFIG`).
    case invalidConfig = 78
    /// A second SIGINT or SIGTERM ended the run at once.
    case interrupted = 130
}
