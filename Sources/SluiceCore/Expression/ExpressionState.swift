internal import SluiceRegex

/// What a stage keeps between events to evaluate one expression: the registers of its `ExpressionProgram`, and a
/// `FieldLocator` for each top-level field it reads, so that each is found where it was in the last event. Made
/// once per stage with ``Expression/makeState()``; the expression itself stays immutable and shared.
public struct ExpressionState: Sendable {
    var locators: [FieldLocator]
    var registers: [JSONValue]
    /// The arguments of the function being called, reused from call to call.
    var arguments: [JSONValue] = []
    /// The match data of each pattern, made at its first match: a state is copied from the program's fresh one
    /// before any, so no two stages ever share one.
    var matchers: [RegexMatcher?]
    /// Where several programs share this state (``SharedNumericPrograms``): the number or boolean of each field
    /// (by slot, below 64) read for the current event, and which of them have been read.
    var scalars: [Scalar?] = []
    var scalarsRead: UInt64 = 0

    /// The match data for pattern `index` of `patterns` (the program's), made at its first use.
    mutating func matcher(_ index: Int, of patterns: [RegexPattern]) -> RegexMatcher {
        if let matcher = matchers[index] { return matcher }
        let matcher = patterns[index].makeMatcher()
        matchers[index] = matcher
        return matcher
    }
}
