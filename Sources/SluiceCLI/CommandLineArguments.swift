/// A parsed command line.
enum Command: Equatable {
    case run(file: String, overrides: MetricsOverrides, watch: Bool)
    case validate(files: [String])
    case test(files: [String])
    case graph(file: String, format: GraphFormat)
    case tap(component: String, api: APIAddress, limit: Int, rate: Double)
    case top(api: APIAddress)
    case list
    case help
    case version
}

/// How `sluice graph` writes the pipeline.
enum GraphFormat: String, Equatable {
    case dot
    case mermaid
}

/// Where `sluice top` and `sluice tap` find a running pipeline's API, and the token it asks for.
struct APIAddress: Equatable {
    var base = "http://127.0.0.1:8686"
    var token: String?
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

/// Parses `sluice`'s arguments (without the program name). `SLUICE_API_TOKEN` in `environment` is the token
/// `top` and `tap` send when `--token` is not given.
func parseCommandLine(_ arguments: [String], environment: [String: String] = [:]) throws(UsageError) -> Command {
    guard let first = arguments.first else { throw UsageError(message: "missing command") }
    let rest = Array(arguments.dropFirst())
    switch first {
    case "--help", "-h", "help": return .help
    case "--version": return .version
    case "list":
        guard rest.isEmpty else { throw UsageError(message: "'list' takes no arguments") }
        return .list
    case "validate", "test":
        if let option = rest.first(where: { $0.hasPrefix("-") }) {
            throw UsageError(message: "unknown option '\(option)' for '\(first)'")
        }
        guard !rest.isEmpty else { throw UsageError(message: "'\(first)' needs at least one pipeline file") }
        return first == "test" ? .test(files: rest) : .validate(files: rest)
    case "graph":
        let options = try OptionReader(rest, command: first, allowed: ["--format"])
        let format = try options.value("--format").map { text throws(UsageError) in
            guard let format = GraphFormat(rawValue: text) else {
                throw UsageError(message: "--format must be dot or mermaid, not '\(text)'")
            }
            return format
        }
        guard options.positional.count == 1 else { throw UsageError(message: "'graph' takes one pipeline file") }
        return .graph(file: options.positional[0], format: format ?? .dot)
    case "tap":
        let options = try OptionReader(rest, command: first, allowed: ["--api", "--token", "--limit", "--rate"])
        let api = options.apiAddress(environment)
        let limit = try options.value("--limit").map { text throws(UsageError) in
            guard let limit = Int(text), (1...1_000_000).contains(limit) else {
                throw UsageError(message: "--limit must be a whole number from 1 to 1000000, not '\(text)'")
            }
            return limit
        }
        let rate = try options.value("--rate").map { text throws(UsageError) in
            guard let rate = Double(text), rate > 0, rate <= 10_000 else {
                throw UsageError(message: "--rate must be events per second above 0 and at most 10000, not '\(text)'")
            }
            return rate
        }
        guard options.positional.count == 1 else {
            throw UsageError(message: "'tap' takes one component id (ID, or ID.OUTPUT for a route's output)")
        }
        let component = options.positional[0]
        guard !component.isEmpty,
            component.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "_-.".contains($0)) })
        else {
            throw UsageError(message: "'\(component)' is not a component id (ID, or ID.OUTPUT for a route's output)")
        }
        return .tap(component: component, api: api, limit: limit ?? 100, rate: rate ?? 10)
    case "top":
        let options = try OptionReader(rest, command: first, allowed: ["--api", "--token"])
        let api = options.apiAddress(environment)
        guard options.positional.isEmpty else { throw UsageError(message: "'top' takes no arguments") }
        return .top(api: api)
    case "run":
        let options = try OptionReader(
            rest, command: first, allowed: ["--metrics-format", "--metrics-to", "--metrics-interval"],
            flags: ["--watch"])
        var overrides = MetricsOverrides()
        if let format = options.value("--metrics-format") {
            guard ["text", "json", "prometheus"].contains(format) else {
                throw UsageError(message: "--metrics-format must be text, json or prometheus, not '\(format)'")
            }
            overrides.format = format
        }
        overrides.destination = options.value("--metrics-to")
        if let text = options.value("--metrics-interval") {
            guard let seconds = Double(text), seconds >= 0, seconds <= 86_400 else {
                throw UsageError(message: "--metrics-interval must be a number of seconds, not '\(text)'")
            }
            overrides.intervalSecs = seconds
        }
        guard options.positional.count <= 1 else { throw UsageError(message: "'run' takes one pipeline file") }
        guard let file = options.positional.first else { throw UsageError(message: "'run' needs a pipeline file") }
        return .run(file: file, overrides: overrides, watch: options.isSet("--watch"))
    default:
        throw UsageError(message: "unknown command '\(first)'")
    }
}

/// Reads `--name value` options and `--name` flags, from those a command allows, and positional arguments.
struct OptionReader {
    private var values: [String: String] = [:]
    private var flagsSet: Set<String> = []
    private(set) var positional: [String] = []

    init(_ arguments: [String], command: String, allowed: Set<String>, flags: Set<String> = []) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if flags.contains(argument) {
                flagsSet.insert(argument)
                index += 1
            } else if argument.hasPrefix("-") {
                guard allowed.contains(argument) else {
                    throw UsageError(message: "unknown option '\(argument)' for '\(command)'")
                }
                guard index + 1 < arguments.count else {
                    throw UsageError(message: "option '\(argument)' needs a value")
                }
                values[argument] = arguments[index + 1]
                index += 2
            } else {
                positional.append(argument)
                index += 1
            }
        }
    }

    /// The value of `option`, when given.
    func value(_ option: String) -> String? { values[option] }

    /// True when the flag `flag` was given.
    func isSet(_ flag: String) -> Bool { flagsSet.contains(flag) }

    /// `--api` and `--token` (or `SLUICE_API_TOKEN`): what `top` and `tap` connect with.
    func apiAddress(_ environment: [String: String]) -> APIAddress {
        APIAddress(
            base: value("--api") ?? APIAddress().base, token: value("--token") ?? environment["SLUICE_API_TOKEN"])
    }
}

let usage = """
    usage: sluice run FILE [--metrics-format text|json|prometheus] [--metrics-to stdout|stderr|PATH]
                           [--metrics-interval SECS] [--watch]
           sluice validate FILE...
           sluice test FILE...
           sluice graph FILE [--format dot|mermaid]
           sluice top [--api URL] [--token TOKEN]
           sluice tap COMPONENT [--api URL] [--token TOKEN] [--limit N] [--rate PER_SEC]
           sluice list
           sluice --help | --version

    Runs a declarative event pipeline: sources -> transforms -> sinks, with bounded buffers and live metrics.

    commands:
      run        run the pipeline in FILE until its sources end or SIGINT/SIGTERM (a second signal exits at once);
                 SIGHUP, or with --watch a change to FILE, reloads it: changed components are replaced in place
      validate   check pipeline files and print every problem with its line and column
      test       run the tests in pipeline files ('tests:'): events into transforms, checks on what comes out
      graph      print the pipeline in FILE as a graph: Graphviz DOT, or a Mermaid flowchart
      top        watch a running pipeline (its 'api' section) in the terminal: rates, drops, buffers, bottleneck
      tap        print events leaving a component of a running pipeline, one JSON per line (default 100, 10/s)
      list       list every component type

    top and tap read the API at http://127.0.0.1:8686 unless --api says otherwise; the token comes from --token or
    SLUICE_API_TOKEN.

    exit codes: 0 success, 1 runtime failure or failed test, 64 usage error, 78 invalid pipeline file
    """
