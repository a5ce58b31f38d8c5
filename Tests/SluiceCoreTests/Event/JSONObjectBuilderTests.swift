import SluiceCore
import SluiceTesting
import Testing

/// `JSONObject.Builder` must build what setting each key through the subscript builds, on either side of the 16
/// keys where it starts finding keys through a dictionary.
struct JSONObjectBuilderTests {
    /// The same keys set through the subscript, the reference.
    static func bySubscript(_ pairs: [(String, JSONValue)], into start: JSONObject = JSONObject()) -> JSONObject {
        var object = start
        for (key, value) in pairs { object[key] = value }
        return object
    }

    static func byBuilder(_ pairs: [(String, JSONValue)], into start: JSONObject = JSONObject()) -> JSONObject {
        var builder = JSONObject.Builder(start)
        for (key, value) in pairs { builder.set(key, value) }
        return builder.object
    }

    @Test(arguments: [3, 15, 16, 17, 40])
    func aRepeatedKeyKeepsItsFirstPlaceAndTakesTheLastValue(keys: Int) {
        var random = SplitMix64(seed: UInt64(keys))
        // Keys drawn with repeats, early keys repeated after the dictionary took over too.
        let pairs: [(String, JSONValue)] = (0..<(keys * 3)).map { step in
            ("k\(random.next() % UInt64(keys))", .int(Int64(step)))
        }
        let built = Self.byBuilder(pairs)
        #expect(built == Self.bySubscript(pairs))
        #expect(Set(built.fields.map(\.key)).count == built.fields.count)
        // The key set first is first, with the value it was set to last.
        #expect(built.fields.first?.key == pairs[0].0)
        #expect(built.fields.first?.value == pairs.last { $0.0 == pairs[0].0 }?.1)
    }

    @Test func keysSetIntoAnObjectReplaceItsValuesInPlaceAndAppendTheRest() {
        let start = Self.bySubscript((0..<20).map { ("s\($0)", .int(Int64($0))) })
        let pairs: [(String, JSONValue)] = [("s19", "last"), ("new", true), ("s0", "first"), ("new", false)]
        let built = Self.byBuilder(pairs, into: start)
        #expect(built == Self.bySubscript(pairs, into: start))
        #expect(built.fields.map(\.key) == (0..<20).map { "s\($0)" } + ["new"])
        #expect(built["s0"] == "first" && built["s19"] == "last" && built["new"] == false)
    }
}
