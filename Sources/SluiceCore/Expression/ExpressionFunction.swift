/// The functions an expression may call.
enum ExpressionFunction: String, CaseIterable, Sendable {
    case abs, round, floor, ceil, min, max, sqrt, pow
    case length, lower, upper, trim, contains, starts_with, ends_with, replace, split, join, matches
    case number, int, string, bool, type, exists
    case now, parse_time, distance_m

    /// How many arguments the function takes.
    var arity: ClosedRange<Int> {
        switch self {
        case .now: 0...0
        case .abs, .floor, .ceil, .sqrt, .length, .lower, .upper, .trim, .number, .int, .string, .bool, .type,
            .exists, .parse_time:
            1...1
        case .round: 1...2
        case .pow, .contains, .starts_with, .ends_with, .split, .join, .matches: 2...2
        case .replace: 3...3
        case .distance_m: 4...4
        case .min, .max: 1...64
        }
    }

    var arityDescription: String {
        switch arity.count {
        case 1: arity.lowerBound == 1 ? "1 argument" : "\(arity.lowerBound) arguments"
        default: arity == 1...64 ? "at least 1 argument" : "\(arity.lowerBound) or \(arity.upperBound) arguments"
        }
    }

    /// False for functions whose result changes between calls, which are never folded at load.
    var isPure: Bool { self != .now }
}
