/// A dynamic JSON value: the payload of every event.
///
/// Integers stay integers (`Int64`) and objects keep their keys in the order they were written.
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number written without fraction or exponent that fits in 64 bits.
    case int(Int64)
    /// Any other number; always finite.
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object with its keys in order.
    case object(JSONObject)
}

/// A JSON object whose keys keep the order they were written or set in.
///
/// Lookups are linear, which beats hashing for the ten-odd keys a typical event has. Keys are unique: setting an
/// existing key replaces its value in place.
public struct JSONObject: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    /// The key-value pairs, in order.
    public private(set) var fields: [Field]

    /// One key and its value.
    public struct Field: Sendable, Hashable {
        /// The key.
        public var key: String
        /// The value.
        public var value: JSONValue

        /// A field of `key` and `value`.
        public init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// An empty object.
    public init() { fields = [] }

    /// Creates an object from fields whose keys the caller knows to be unique (checked in debug builds).
    public init(uniqueFields: [Field]) {
        assert(Set(uniqueFields.map(\.key)).count == uniqueFields.count, "Keys must be unique.")
        fields = uniqueFields
    }

    /// An object of the literal's keys, in the order written; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        fields = []
        fields.reserveCapacity(elements.count)
        for (key, value) in elements { self[key] = value }
    }

    /// The number of keys.
    public var count: Int { fields.count }

    /// The value for `key`, or `nil`; setting `nil` removes the key, setting a new key appends it.
    public subscript(key: String) -> JSONValue? {
        get {
            for field in fields where field.key == key { return field.value }
            return nil
        }
        set {
            if let index = fields.firstIndex(where: { $0.key == key }) {
                if let newValue { fields[index].value = newValue } else { fields.remove(at: index) }
            } else if let newValue {
                fields.append(Field(key: key, value: newValue))
            }
        }
    }
}

extension JSONObject {
    /// Builds an object key by key as setting each through the subscript would (a repeated key keeps its first
    /// place and takes the last value), in linear time: past 16 keys they are found through a dictionary, so that
    /// an object of many keys (a wide JSON object, a log line of many pairs) does not take quadratic time.
    public struct Builder {
        private var fields: [Field]
        /// Each key's place in `fields`, once there are 16.
        private var positions: [String: Int]?

        /// An empty object.
        public init() { fields = [] }

        /// `object`, to set more keys in (taken, so that its fields are not copied).
        public init(_ object: consuming JSONObject) { fields = object.fields }

        /// Sets `key` to `value`: in its place if the object has it, else appended.
        public mutating func set(_ key: String, _ value: JSONValue) {
            if positions == nil, fields.count < 16 {
                // Comparing lengths first skips most string comparisons (a non-inlined call each), since keys differ.
                let length = key.utf8.count
                if let existing = fields.firstIndex(where: { $0.key.utf8.count == length && $0.key == key }) {
                    fields[existing].value = value
                } else {
                    fields.append(Field(key: key, value: value))
                }
                return
            }
            if positions == nil {
                var map: [String: Int] = [:]
                for (position, field) in fields.enumerated() { map[field.key] = position }
                positions = map
            }
            if let existing = positions![key] {
                fields[existing].value = value
            } else {
                positions![key] = fields.count
                fields.append(Field(key: key, value: value))
            }
        }

        /// The object built.
        public var object: JSONObject { JSONObject(uniqueFields: fields) }
    }
}

extension JSONValue {
    /// The object's value for `key`, or `nil` when this is not an object or has no such key.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The string, when this value is one.
    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// The elements, when this value is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// The integer, when this value is one.
    public var intValue: Int64? {
        if case .int(let integer) = self { return integer }
        return nil
    }

    /// The number as a double, when this value is an integer or a double.
    public var doubleValue: Double? {
        switch self {
        case .int(let integer): Double(integer)
        case .double(let double): double
        default: nil
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// `nil` is JSON `null`.
    public init(nilLiteral: ()) { self = .null }
    /// `true` and `false`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer literal is an integer.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A floating-point literal is a double.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A string literal is a string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array literal is an array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// A dictionary literal is an object, its keys in the order written.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var object = JSONObject()
        for (key, value) in elements { object[key] = value }
        self = .object(object)
    }
}
