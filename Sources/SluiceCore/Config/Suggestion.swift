/// Finds the closest known word to a misspelled one, for "did you mean" notes.
public enum Suggestion {
    /// The candidate nearest to `word` by edit distance, when it is close enough to be a plausible typo.
    static func closest(to word: String, among candidates: [String]) -> String? {
        let limit = max(1, min(3, word.count / 3))
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(Array(word.lowercased()), Array(candidate.lowercased()))
            if distance <= limit, distance < (best?.distance ?? Int.max) { best = (candidate, distance) }
        }
        return best?.candidate
    }

    /// "expected one of: a, b, c; did you mean 'b'?"; the suggestion is left out when nothing is close.
    public static func expectedOneOf(_ candidates: [String], given word: String?) -> String {
        var note = "expected one of: " + candidates.joined(separator: ", ")
        if let word, let match = closest(to: word, among: candidates) { note += "; did you mean '\(match)'?" }
        return note
    }

    /// Levenshtein distance, where swapping two neighbours also counts as one edit.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous2[j - 2] + 1)
                }
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}
