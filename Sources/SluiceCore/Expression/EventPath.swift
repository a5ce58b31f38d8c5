/// A dotted field path used as a map target or a key list entry (`alert.near_depot`), with the writes `map` needs.
public struct EventPath: Sendable, Hashable, CustomStringConvertible {
    /// The keys, outermost first.
    public let keys: [String]

    /// Parses `a.b.c`; `nil` when a key is empty.
    public init?(_ text: String) {
        let keys = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !keys.isEmpty, !keys.contains(where: \.isEmpty) else { return nil }
        self.keys = keys
    }

    /// The keys joined by dots: `a.b`.
    public var description: String { keys.joined(separator: ".") }

    /// The value at the path, or `nil`.
    public func get(_ value: JSONValue) -> JSONValue? {
        Evaluator.lookup(keys.map { .key($0) }, in: value)
    }

    /// Sets the value, creating objects along the way; fails when a step is not an object.
    public func set(_ newValue: JSONValue, in value: inout JSONValue) throws(EvaluationError) {
        try set(newValue, in: &value, depth: 0)
    }

    private func set(_ newValue: JSONValue, in value: inout JSONValue, depth: Int) throws(EvaluationError) {
        guard case .object(var object) = value else {
            let at = depth == 0 ? "the event" : keys[..<depth].joined(separator: ".")
            throw EvaluationError("cannot set \(self): \(at) is \(Evaluator.describe(value)), not an object")
        }
        // Leave `value` holding something small while `object` is changed, so the change happens in place.
        value = .null
        let key = keys[depth]
        if depth == keys.count - 1 {
            object[key] = newValue
        } else {
            var child = object[key] ?? .object(JSONObject())
            if child == .null { child = .object(JSONObject()) }
            do {
                try set(newValue, in: &child, depth: depth + 1)
            } catch {
                value = .object(object)
                throw error
            }
            object[key] = child
        }
        value = .object(object)
    }

    /// Removes the value at the path if it is there.
    public func remove(from value: inout JSONValue) {
        remove(from: &value, depth: 0)
    }

    private func remove(from value: inout JSONValue, depth: Int) {
        guard case .object(var object) = value, object[keys[depth]] != nil else { return }
        value = .null
        if depth == keys.count - 1 {
            object[keys[depth]] = nil
        } else if var child = object[keys[depth]] {
            remove(from: &child, depth: depth + 1)
            object[keys[depth]] = child
        }
        value = .object(object)
    }
}
