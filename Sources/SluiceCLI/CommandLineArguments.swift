/// A parsed command line.
enum Command: Equatable {
    case run(file: String, overrides: MetricsOverrides)
    case validate(files: [String])
    case list
    case help
    case version
}

/// Metrics settings given on the command line, which win over the file's.
struct MetricsOverrides: Equatable {
    var format: String?
    var destination: String?
    var intervalSecs: Double?
}

/// A command line that cannot be understood, with the message to print before the usage.
struct UsageError: Error, Equatable {
    let message: String
}

/// Parses `sluice`'s arguments (without the program name).
func parseCommandLine(_ arguments: [String]) throws(UsageError) -> Command {
    guard let first = arguments.first else { throw UsageError(message: "missing command") }
    let rest = Array(arguments.dropFirst())
    switch first {
    case "--help", "-h", "help": return .help
    case "--version": return .version
    case "list":
        guard rest.isEmpty else { throw UsageError(message: "'list' takes no arguments") }
        return .list
    case "validate":
        if let option = rest.first(where: { $0.hasPrefix("-") }) {
            throw UsageError(message: "unknown option '\(option)' for 'validate'")
        }
        guard !rest.isEmpty else { throw UsageError(message: "'validate' needs at least one pipeline file") }
        return .validate(files: rest)
    case "run":
        var file: String?
        var overrides = MetricsOverrides()
        var index = 0
        func value(for option: String) throws(UsageError) -> String {
            index += 1
            guard index < rest.count else { throw UsageError(message: "option '\(option)' needs a value") }
            return rest[index]
        }
        while index < rest.count {
            let argument = rest[index]
            switch argument {
            case "--metrics-format":
                let format = try value(for: argument)
                guard ["text", "json", "prometheus"].contains(format) else {
                    throw UsageError(message: "--metrics-format must be text, json or prometheus, not '\(format)'")
                }
                overrides.format = format
            case "--metrics-to":
                overrides.destination = try value(for: argument)
            case "--metrics-interval":
                let text = try value(for: argument)
                guard let seconds = Double(text), seconds >= 0, seconds <= 86_400 else {
                    throw UsageError(message: "--metrics-interval must be a number of seconds, not '\(text)'")
                }
                overrides.intervalSecs = seconds
            default:
                if argument.hasPrefix("-") { throw UsageError(message: "unknown option '\(argument)' for 'run'") }
                guard file == nil else { throw UsageError(message: "'run' takes one pipeline file") }
                file = argument
            }
            index += 1
        }
        guard let file else { throw UsageError(message: "'run' needs a pipeline file") }
        return .run(file: file, overrides: overrides)
    default:
        throw UsageError(message: "unknown command '\(first)'")
    }
}

let usage = """
    usage: sluice run FILE [--metrics-format text|json|prometheus] [--metrics-to stdout|stderr|PATH]
                           [--metrics-interval SECS]
           sluice validate FILE...
           sluice list
           sluice --help | --version

    Runs a declarative event pipeline: sources -> transforms -> sinks, with bounded buffers and live metrics.

    commands:
      run        run the pipeline in FILE until its sources end or SIGINT/SIGTERM (a second signal exits at once)
      validate   check pipeline files and print every problem with its line and column
      list       list every component type

    exit codes: 0 success, 1 runtime failure, 64 usage error, 78 invalid pipeline file
    """
