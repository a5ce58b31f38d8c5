/// The functions an expression may call.
enum ExpressionFunction: String, CaseIterable, Sendable {
    case abs, round, floor, ceil, min, max, sqrt, pow
    case length, lower, upper, trim, contains, starts_with, ends_with, replace, split, join, matches
    case number, int, string, bool, type, exists
    case now, parse_time, distance_m
    case parse_json, parse_logfmt, parse_key_value, parse_csv, parse_syslog, parse_common_log, parse_combined_log
    case parse_regex

    /// How many arguments the function takes.
    var arity: ClosedRange<Int> {
        switch self {
        case .now: 0...0
        case .abs, .floor, .ceil, .sqrt, .length, .lower, .upper, .trim, .number, .int, .string, .bool, .type,
            .exists, .parse_json, .parse_logfmt, .parse_syslog, .parse_common_log, .parse_combined_log:
            1...1
        case .round, .parse_time, .parse_csv: 1...2
        case .parse_key_value: 1...3
        case .pow, .contains, .starts_with, .ends_with, .split, .join, .matches, .parse_regex: 2...2
        case .replace: 3...3
        case .distance_m: 4...4
        case .min, .max: 1...64
        }
    }

    var arityDescription: String {
        switch arity.count {
        case 1: arity.lowerBound == 1 ? "1 argument" : "\(arity.lowerBound) arguments"
        case 2: "\(arity.lowerBound) or \(arity.upperBound) arguments"
        default: arity == 1...64 ? "at least 1 argument" : "\(arity.lowerBound) to \(arity.upperBound) arguments"
        }
    }

    /// False for functions whose result changes between calls, which are never folded at load (a syslog line's
    /// year is taken from the clock).
    var isPure: Bool { self != .now && self != .parse_syslog }
}
