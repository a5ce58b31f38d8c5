#if canImport(Glibc)
    internal import Glibc
#endif

/// Recognises JSON text that Sluice would write back byte for byte, so an event can keep its bytes and skip the
/// parse and the write when no stage changes it.
///
/// Text is *canonical* when it is valid JSON and `JSONWriter.write(JSONReader.parse(text))` gives the same bytes.
/// ``isCanonical(_:)`` checks a sufficient condition in one pass without allocating (after warm-up), and says
/// "no" for anything it is not sure of; such text takes the full parse, which also finds the errors. Canonical:
///
/// - no whitespace outside strings;
/// - strings of valid UTF-8 using only the escapes the writer writes (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`);
/// - object keys of ASCII only (Swift compares non-ASCII keys by canonical equivalence, bytes would not), unique,
///   at most 64 per object;
/// - integers of at most 18 digits other than `-0`; other numbers without exponent, of at most 15 significant
///   digits, at least 0.0001 in magnitude, with no trailing zero after the point unless it is the only digit
///   there: exactly the shortest form Swift prints for that double (`23.6`, `65.0`, `0.0001`);
/// - nesting no deeper than ``JSONReader/maxDepth``.
public struct CanonicalJSONScanner {
    /// Room for the keys of the objects open on the current path, to find a key written twice; an object
    /// that would overflow it is not canonical (the full parse takes it). Room for one object's at first, grown
    /// to ``maxOpenKeys`` by the first text that needs more: a scanner made for one event (`Event(json:)`) or
    /// for each of many files does not fill 24 KB.
    private var keys = [KeyMark](repeating: KeyMark(start: nil, count: 0, prefix: 0), count: Cursor.maxKeysPerObject)
    static let maxOpenKeys = 1024
    /// The top-level keys of the last object found canonical, to compare the next one's with (see
    /// ``KeyTemplate``).
    private var template = KeyTemplate()

    /// The ``KeySignature`` of the top-level keys of the last text found canonical.
    public private(set) var topLevelKeys = KeySignature.unknown
    /// True when the last text found canonical is a *flat* object: only scalar values, and no backslash anywhere.
    /// In such text every `"key":` is a top-level key, so a field can be found by searching for its bytes.
    public private(set) var isFlat = false

    /// A scanner with nothing scanned yet.
    public init() {}

    /// True when `bytes` are canonical JSON text (see the type's description).
    public mutating func isCanonical(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let start = bytes.baseAddress, !bytes.isEmpty else { return false }
        let template = template.view
        func scan(_ keys: inout [KeyMark]) -> (Bool, KeySignature, Bool, Int, Bool, outOfRoom: Bool) {
            keys.withUnsafeMutableBufferPointer { keys in
                var cursor = Cursor(position: start, end: start + bytes.count, keys: keys, template: template)
                let canonical = cursor.value(depth: 0) && cursor.position == cursor.end
                return (
                    canonical, cursor.topLevelKeys, cursor.flat && start.pointee == UInt8(ascii: "{"),
                    cursor.topLevelKeyCount, cursor.followedTemplate, cursor.outOfRoom
                )
            }
        }
        var (canonical, signature, flat, topKeys, followed, outOfRoom) = scan(&keys)
        if outOfRoom, keys.count < Self.maxOpenKeys {
            keys = [KeyMark](repeating: KeyMark(start: nil, count: 0, prefix: 0), count: Self.maxOpenKeys)
            (canonical, signature, flat, topKeys, followed, outOfRoom) = scan(&keys)
        }
        topLevelKeys = signature
        isFlat = flat
        // The next text is compared with this one's keys, unless they are the ones it was compared with.
        if canonical, start.pointee == UInt8(ascii: "{"), !followed {
            if !isKnownUniquelyReferenced(&self.template.storage) { self.template = KeyTemplate() }
            keys.withUnsafeBufferPointer { self.template.rebuild(from: UnsafeBufferPointer(rebasing: $0[..<topKeys])) }
        }
        return canonical
    }
}

/// The top-level keys of the last object a scanner found canonical, in order, each with its bytes as they stood
/// (`"key":`), its first eight bytes, hash and duplicate-check bit: machine-written lines repeat their keys in
/// the same order, so the scanner compares each key with the one in its place here and, while they agree,
/// neither scans, hashes nor checks it against the others (they were unique in the last object).
///
/// Its memory is its own (``Storage``), read through plain pointers, so that a scan retains nothing; a scanner
/// copied shares it until one of the copies rebuilds it.
private struct KeyTemplate {
    struct Key {
        /// Where `"key":` is in the template's bytes, and how long it is.
        var offset: Int
        var length: Int
        /// The key's length and first eight bytes, as a ``KeyMark`` has them.
        var count: Int
        var prefix: UInt64
        var hash: UInt64
    }

    /// Room for the keys of an object (``Cursor/maxKeysPerObject``) and their bytes; a longer template is not kept.
    final class Storage {
        static let byteCapacity = 4096
        let keys = UnsafeMutablePointer<Key>.allocate(capacity: Cursor.maxKeysPerObject)
        let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: byteCapacity)
        var count = 0
        var signature = KeySignature.empty

        deinit {
            keys.deallocate()
            bytes.deallocate()
        }
    }

    var storage = Storage()

    /// What a scan reads: plain values, so that handing it over counts no reference.
    struct View {
        let keys: UnsafePointer<Key>
        let bytes: UnsafePointer<UInt8>
        let count: Int
        let signature: KeySignature

        subscript(index: Int) -> Key { keys[index] }
    }

    var view: View {
        View(keys: storage.keys, bytes: storage.bytes, count: storage.count, signature: storage.signature)
    }

    /// Takes the keys of `marks`, which point into the text just scanned: each is preceded by its quote and
    /// followed by `":`. A template is kept only for keys that fit, none with an escape (text matching such a key
    /// would not be flat).
    mutating func rebuild(from marks: UnsafeBufferPointer<KeyMark>) {
        let storage = storage
        storage.count = 0
        storage.signature = .empty
        var offset = 0
        for mark in marks {
            guard let start = mark.start, marks.count <= Cursor.maxKeysPerObject,
                offset + mark.count + 3 <= Storage.byteCapacity,
                memchr(start, Int32(UInt8(ascii: "\\")), mark.count) == nil
            else {
                // A template of part of the keys cannot give the whole signature: the scanner counts every key.
                storage.count = 0
                return
            }
            let hash = KeySignature.hash(start, count: mark.count, prefix: mark.prefix)
            (storage.bytes + offset).update(from: start - 1, count: mark.count + 3)
            (storage.keys + storage.count).initialize(
                to: Key(offset: offset, length: mark.count + 3, count: mark.count, prefix: mark.prefix, hash: hash))
            storage.count += 1
            storage.signature.insert(hash: hash)
            offset += mark.count + 3
        }
    }
}

/// A set of object keys as a 192-bit Bloom filter (two bits per key, picked by a hash of its bytes): a key whose
/// bits are not both set is surely not there, so a map that adds a field to an event's text need not search it
/// (with 30 keys, about one search in fourteen is still needed; with 11, one in eighty). Built for the top-level keys
/// of the text the scanner checks; ``unknown`` (every bit set) when nobody counted. 192 bits rather than 256 so that
/// an event is 64 bytes (see ``Event``).
public struct KeySignature: Sendable, Hashable {
    // Three words rather than a SIMD indexed at run time, which went through memory on every insert.
    private var word0: UInt64
    private var word1: UInt64
    private var word2: UInt64

    /// Says every key may be there.
    public static let unknown = KeySignature(all: ~0)
    static let empty = KeySignature(all: 0)

    private init(all bits: UInt64) {
        (word0, word1, word2) = (bits, bits, bits)
    }

    /// The signature of these keys, for a source that writes text with known keys (ASCII needing no escape).
    public init(keys: [String]) {
        self = .empty
        for var key in keys { key.withUTF8 { insert($0) } }
    }

    /// False only when `key`, its bytes as canonical text writes them, is surely not in the set.
    package func mayContain(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
        mayContain(hash: Self.hash(key))
    }

    /// ``mayContain(_:)`` for a key whose hash was computed once (``hash(_:)``). Inlined, as `contains` is: a map
    /// asks it for every field it sets, and one map setting 20 fields took 14 % less CPU than with the call.
    @inline(__always)
    func mayContain(hash: UInt64) -> Bool {
        contains(Self.firstBit(hash)) && contains(Self.secondBit(hash))
    }

    mutating func insert(_ key: UnsafeBufferPointer<UInt8>) { insert(hash: Self.hash(key)) }

    @inline(__always)
    mutating func insert(hash: UInt64) {
        set(Self.firstBit(hash))
        set(Self.secondBit(hash))
    }

    /// A key's two bits, each from 16 bits of its hash scaled to 0..<192 (a multiply and a shift, not a division).
    @inline(__always)
    private static func firstBit(_ hash: UInt64) -> Int { Int(((hash >> 48) &* 192) >> 16) }
    @inline(__always)
    private static func secondBit(_ hash: UInt64) -> Int { Int((((hash >> 32) & 0xFFFF) &* 192) >> 16) }

    @inline(__always)
    private func contains(_ bit: Int) -> Bool {
        let word: UInt64
        switch bit >> 6 {
        case 0: word = word0
        case 1: word = word1
        default: word = word2
        }
        return word & (1 << UInt64(bit & 63)) != 0
    }

    @inline(__always)
    private mutating func set(_ bit: Int) {
        let mask: UInt64 = 1 << UInt64(bit & 63)
        let word = bit >> 6
        word0 |= word == 0 ? mask : 0
        word1 |= word == 1 ? mask : 0
        word2 |= word == 2 ? mask : 0
    }

    static func hash(_ key: UnsafeBufferPointer<UInt8>) -> UInt64 {
        guard let start = key.baseAddress else { return 0 }
        return hash(start, count: key.count, prefix: KeyMark.prefix(start, key.count, readable: key.count))
    }

    /// A hash of a key's length, its first eight bytes (already loaded) and its last eight.
    @inline(__always)
    static func hash(_ start: UnsafePointer<UInt8>, count: Int, prefix: UInt64) -> UInt64 {
        let suffix = count > 8 ? UnsafeRawPointer(start + count - 8).loadUnaligned(as: UInt64.self) : 0
        let mixed = (prefix ^ (UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9)) &* 0x9E37_79B9_7F4A_7C15
        return (mixed ^ suffix ^ (mixed >> 29)) &* 0xBF58_476D_1CE4_E5B9
    }
}

/// One key of an open object: where it is, and its first eight bytes so most comparisons end without `memcmp`.
private struct KeyMark {
    var start: UnsafePointer<UInt8>?
    var count: Int
    var prefix: UInt64

    /// The first (up to) eight bytes of a key as a little-endian word; `readable` bytes may be loaded from `start`.
    @inline(__always)
    static func prefix(_ start: UnsafePointer<UInt8>, _ count: Int, readable: Int) -> UInt64 {
        if readable >= 8 {
            let word = UnsafeRawPointer(start).loadUnaligned(as: UInt64.self)
            return count >= 8 ? word : word & ((1 << UInt64(count * 8)) &- 1)
        }
        var word: UInt64 = 0
        for offset in 0..<min(count, 8) { word |= UInt64(start[offset]) << UInt64(offset * 8) }
        return word
    }
}

/// The scanner's state during one text, kept in locals so the loops run in registers.
private struct Cursor {
    var position: UnsafePointer<UInt8>
    let end: UnsafePointer<UInt8>
    let keys: UnsafeMutableBufferPointer<KeyMark>
    var keyCount = 0
    var topLevelKeys = KeySignature.empty
    /// No container below the top level and no backslash so far.
    var flat = true
    /// The last object's top-level keys, to compare this text's with.
    let template: KeyTemplate.View
    /// The top-level object's keys: how many, and whether they were exactly the template's.
    var topLevelKeyCount = 0
    var followedTemplate = false
    /// The objects open at once held more keys than `keys` has room for.
    var outOfRoom = false

    init(
        position: UnsafePointer<UInt8>, end: UnsafePointer<UInt8>, keys: UnsafeMutableBufferPointer<KeyMark>,
        template: KeyTemplate.View
    ) {
        self.position = position
        self.end = end
        self.keys = keys
        self.template = template
    }

    static let maxKeysPerObject = 64

    mutating func value(depth: Int) -> Bool {
        guard position < end else { return false }
        switch position.pointee {
        case UInt8(ascii: "{"): return object(depth: depth + 1)
        case UInt8(ascii: "["): return array(depth: depth + 1)
        case UInt8(ascii: "\""): return string(isKey: false)
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
        default: return false
        }
    }

    mutating func object(depth: Int) -> Bool {
        guard depth <= JSONReader.maxDepth else { return false }
        if depth > 1 { flat = false }
        position += 1
        guard position < end else { return false }
        if position.pointee == UInt8(ascii: "}") {
            position += 1
            return true
        }
        let first = keyCount
        defer { keyCount = first }
        // One bit per key seen, by hash: only a key whose bit is already set is compared with the others.
        var seen: UInt64 = 0
        // At the top level, keys are compared with the last object's while they agree (`index` of them so far).
        var following = depth == 1 && template.count > 0
        var index = 0
        while true {
            guard position < end, position.pointee == UInt8(ascii: "\"") else { return false }
            guard keyCount - first < Self.maxKeysPerObject else { return false }
            guard keyCount < keys.count else {
                outOfRoom = true
                return false
            }
            if following, index < template.count, matchesTemplateKey(index) {
                // The key in this place in the last object: known valid, and unique among the ones before it.
                let key = template[index]
                keys[keyCount] = KeyMark(start: position + 1, count: key.count, prefix: key.prefix)
                seen |= 1 << (key.hash >> 58)
                position += key.length
            } else {
                if following {
                    // From here the keys are counted one by one; those that agreed go into the signature now.
                    following = false
                    for earlier in 0..<index { topLevelKeys.insert(hash: template[earlier].hash) }
                }
                let keyStart = position + 1
                guard string(isKey: true) else { return false }
                let count = position - 1 - keyStart
                let prefix = KeyMark.prefix(keyStart, count, readable: end - keyStart)
                let hash = KeySignature.hash(keyStart, count: count, prefix: prefix)
                if depth == 1 { topLevelKeys.insert(hash: hash) }
                let bit: UInt64 = 1 << (hash >> 58)
                if seen & bit != 0 {
                    for slot in first..<keyCount where keys[slot].prefix == prefix && keys[slot].count == count {
                        if count <= 8 || memcmp(keys[slot].start!, keyStart, count) == 0 { return false }
                    }
                }
                seen |= bit
                keys[keyCount] = KeyMark(start: keyStart, count: count, prefix: prefix)
                guard position < end, position.pointee == UInt8(ascii: ":") else { return false }
                position += 1
            }
            keyCount += 1
            index += 1
            guard value(depth: depth), position < end else { return false }
            let byte = position.pointee
            position += 1
            if byte == UInt8(ascii: "}") {
                if depth == 1 {
                    topLevelKeyCount = index
                    followedTemplate = following && index == template.count
                    if followedTemplate {
                        topLevelKeys = template.signature
                    } else if following {
                        for earlier in 0..<index { topLevelKeys.insert(hash: template[earlier].hash) }
                    }
                }
                return true
            }
            guard byte == UInt8(ascii: ",") else { return false }
        }
    }

    /// True when the text at `position` is `"key":` of template key `index`.
    @inline(__always)
    func matchesTemplateKey(_ index: Int) -> Bool {
        let key = template[index]
        guard end - position >= key.length else { return false }
        let expected = UnsafeRawPointer(template.bytes + key.offset)
        let here = UnsafeRawPointer(position)
        // Eight bytes at a time, the last eight overlapping the ones before: keys are short.
        if key.length >= 8 {
            var offset = 0
            while offset + 8 < key.length {
                guard
                    here.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                        == expected.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                else { return false }
                offset += 8
            }
            return here.loadUnaligned(fromByteOffset: key.length - 8, as: UInt64.self)
                == expected.loadUnaligned(fromByteOffset: key.length - 8, as: UInt64.self)
        }
        // Three to seven bytes: two four-byte words, overlapping, or two bytes and one.
        if key.length >= 4 {
            return here.loadUnaligned(as: UInt32.self) == expected.loadUnaligned(as: UInt32.self)
                && here.loadUnaligned(fromByteOffset: key.length - 4, as: UInt32.self)
                    == expected.loadUnaligned(fromByteOffset: key.length - 4, as: UInt32.self)
        }
        return here.loadUnaligned(as: UInt16.self) == expected.loadUnaligned(as: UInt16.self)
            && here.load(fromByteOffset: 2, as: UInt8.self) == expected.load(fromByteOffset: 2, as: UInt8.self)
    }

    mutating func array(depth: Int) -> Bool {
        guard depth <= JSONReader.maxDepth else { return false }
        flat = false
        position += 1
        guard position < end else { return false }
        if position.pointee == UInt8(ascii: "]") {
            position += 1
            return true
        }
        while true {
            guard value(depth: depth), position < end else { return false }
            let byte = position.pointee
            position += 1
            if byte == UInt8(ascii: "]") { return true }
            guard byte == UInt8(ascii: ",") else { return false }
        }
    }

    mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard end - position >= count, memcmp(position, word.utf8Start, count) == 0 else { return false }
        position += count
        return true
    }

    mutating func string(isKey: Bool) -> Bool {
        position += 1
        while true {
            position = PlainBytes.skip(from: position, to: end)
            guard position < end else { return false }
            let byte = position.pointee
            if byte == UInt8(ascii: "\"") {
                position += 1
                return true
            }
            if byte == UInt8(ascii: "\\") {
                flat = false
                guard end - position >= 2 else { return false }
                switch position[1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                    UInt8(ascii: "r"), UInt8(ascii: "t"):
                    position += 2
                default:
                    // `\/` and `\u` escapes are valid, but the writer would write them differently.
                    return false
                }
            } else if byte < 0x20 || isKey || !utf8Sequence() {
                return false
            }
        }
    }

    /// Steps over one well-formed UTF-8 sequence of two to four bytes (Unicode, table 3-7).
    mutating func utf8Sequence() -> Bool {
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch position.pointee {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            high = 0x9F
        case 0xF0:
            length = 4
            low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            high = 0x8F
        default: return false
        }
        guard end - position >= length, position[1] >= low, position[1] <= high else { return false }
        for offset in 2..<length where position[offset] & 0xC0 != 0x80 { return false }
        position += length
        return true
    }

    mutating func digits() -> Int {
        // Numbers here are short: a plain loop beats the eight-byte one (measured). On a local: stepping `position`
        // itself stored it back to memory before every byte read, as a byte read may alias anything.
        let start = position
        var here = position
        while here < end, here.pointee &- UInt8(ascii: "0") < 10 { here += 1 }
        position = here
        return here - start
    }

    mutating func number() -> Bool {
        let negative = position.pointee == UInt8(ascii: "-")
        if negative { position += 1 }
        let integerStart = position
        let integerDigits = digits()
        guard integerDigits > 0 else { return false }
        let integerIsZero = integerStart.pointee == UInt8(ascii: "0")
        let hasPoint = position < end && position.pointee == UInt8(ascii: ".")
        // A leading zero is invalid; `-0` reads as the integer 0 and is written `0`.
        if integerIsZero, integerDigits > 1 || (negative && !hasPoint) { return false }
        guard hasPoint else { return integerDigits <= 18 && !atExponent }
        position += 1
        let fractionStart = position
        let fractionDigits = digits()
        guard fractionDigits > 0, !atExponent else { return false }
        if fractionDigits == 1, fractionStart.pointee == UInt8(ascii: "0") { return integerDigits <= 15 }
        guard position[-1] != UInt8(ascii: "0") else { return false }
        if !integerIsZero { return integerDigits + fractionDigits <= 15 }
        var zeros = 0
        while fractionStart[zeros] == UInt8(ascii: "0") { zeros += 1 }
        return zeros <= 3 && fractionDigits - zeros <= 15
    }

    var atExponent: Bool { position < end && position.pointee | 0x20 == UInt8(ascii: "e") }
}

/// Skipping the bytes of a string that need no attention, eight at a time.
enum PlainBytes {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// The first position from `start` holding a quote, a backslash, a control character or a non-ASCII byte,
    /// or `end`.
    @inline(__always)
    static func skip(from start: UnsafePointer<UInt8>, to end: UnsafePointer<UInt8>) -> UnsafePointer<UInt8> {
        var position = start
        while end - position >= 8 {
            let word = UnsafeRawPointer(position).loadUnaligned(as: UInt64.self)
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            // A byte below 0x20 borrows in `word - 0x20...`; a zero byte of `quote`/`backslash` borrows in `- ones`.
            // Borrows only run upwards, so the lowest flag marks the first such byte (little-endian: first in memory).
            let flags =
                (((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
                    | word) & highs
            if flags != 0 { return position + flags.trailingZeroBitCount / 8 }
            position += 8
        }
        while position < end {
            let byte = position.pointee
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { break }
            position += 1
        }
        return position
    }

    /// The first position from `start` holding `byte` (or `other`, when given), or `end`.
    @inline(__always)
    static func first(
        _ byte: UInt8, or other: UInt8? = nil, from start: UnsafePointer<UInt8>, to end: UnsafePointer<UInt8>
    ) -> UnsafePointer<UInt8> {
        let alternative = other ?? byte
        var position = start
        while end - position >= 8 {
            let word = UnsafeRawPointer(position).loadUnaligned(as: UInt64.self)
            // A zero byte of a difference, a byte equal to the one sought, borrows in `- ones`; as in
            // ``skip(from:to:)``, the lowest flag marks the first one.
            let difference = word ^ (ones &* UInt64(byte))
            let otherDifference = word ^ (ones &* UInt64(alternative))
            let flags = ((difference &- ones) & ~difference | (otherDifference &- ones) & ~otherDifference) & highs
            if flags != 0 { return position + flags.trailingZeroBitCount / 8 }
            position += 8
        }
        while position < end, position.pointee != byte, position.pointee != alternative { position += 1 }
        return position
    }

    /// The value of the ASCII digits at `start` and how many there are (1 to 7), read with one eight-byte load and
    /// no branch per digit; `nil` when there is no digit, fewer than eight bytes are left, or all eight are digits.
    @inline(__always)
    static func digits(at start: UnsafePointer<UInt8>, to end: UnsafePointer<UInt8>) -> (value: Int64, count: Int)? {
        guard end - start >= 8 else { return nil }
        // The first byte in the lowest, whatever the machine's byte order.
        let word = UInt64(littleEndian: UnsafeRawPointer(start).loadUnaligned(as: UInt64.self))
        let notDigits = notDigitFlags(word)
        let count = notDigits.trailingZeroBitCount / 8
        guard count > 0, count < 8 else { return nil }
        // Each digit's byte less `0`, shifted to the top bytes: eight digits with leading zeros (the first in the
        // lowest byte), combined into pairs, then fours, then the whole.
        var number = (word ^ (ones &* 0x30)) << (64 - 8 * count)
        number = (number &* 2561) >> 8
        number = ((number & 0x00FF_00FF_00FF_00FF) &* 6_553_601) >> 16
        number = ((number & 0x0000_FFFF_0000_FFFF) &* 42_949_672_960_001) >> 32
        return (Int64(number), count)
    }

    /// The first position from `start` not holding an ASCII digit, or `end`.
    @inline(__always)
    static func skipDigits(from start: UnsafePointer<UInt8>, to end: UnsafePointer<UInt8>) -> UnsafePointer<UInt8> {
        var position = start
        while end - position >= 8 {
            let notDigits = notDigitFlags(UnsafeRawPointer(position).loadUnaligned(as: UInt64.self))
            if notDigits != 0 { return position + notDigits.trailingZeroBitCount / 8 }
            position += 8
        }
        while position < end, position.pointee &- UInt8(ascii: "0") < 10 { position += 1 }
        return position
    }

    /// Bits set in every byte of `word` (eight bytes of text, loaded as they lie) that is not an ASCII digit, and
    /// none in the bytes before the first such one: a digit is 0x30...0x39, high nibble 3, and adding 6 keeps it 3.
    /// A carry out of a byte only happens for bytes >= 0xFA, which are flagged themselves, so the lowest flagged
    /// byte is the first non-digit.
    @inline(__always)
    private static func notDigitFlags(_ word: UInt64) -> UInt64 {
        ((word & 0xF0F0_F0F0_F0F0_F0F0) ^ 0x3030_3030_3030_3030)
            | (((word &+ 0x0606_0606_0606_0606) & 0xF0F0_F0F0_F0F0_F0F0) ^ 0x3030_3030_3030_3030)
    }
}

/// Reading fields out of an event's text without parsing the rest of it. The text is canonical in the wider
/// sense: exactly what `JSONWriter` writes for some value whose keys are ASCII (the scanner accepts a subset of
/// such text; the simulator and `map` also write numbers with exponents and `\u` escapes).
///
/// Every read checks the end of the text, so text that breaks the rules (which only code in this package can put
/// into an event) gives a missing or wrong field, never a read outside its bytes.
enum CanonicalJSON {
    /// Where a path leads in a text.
    enum Lookup {
        /// The byte range of the value at the path.
        case found(Range<Int>)
        /// A key is missing, an index out of range, or a step meets something that is not an object or array.
        case missing
        /// A key that cannot be compared as bytes (non-ASCII, or needing an escape): parse the text instead.
        case unsupported
    }

    /// Follows `steps` through `text`, which must be canonical, have `topLevelKeys` at its top level, and be flat
    /// when `flat` says so.
    static func find(
        _ steps: [PathStep], in text: UnsafeBufferPointer<UInt8>, topLevelKeys: KeySignature, flat: Bool
    ) -> Lookup {
        var range = 0..<text.count
        for step in steps {
            switch step {
            case .key(let key):
                guard byte(range.lowerBound, of: text) == UInt8(ascii: "{") else { return .missing }
                let keys = range.lowerBound == 0 ? topLevelKeys : .unknown
                let found = field(key, inObjectAt: range.lowerBound, of: text, keys: keys, flat: flat)
                guard case .found(let value) = found else { return found }
                range = value
            case .index(let index):
                guard byte(range.lowerBound, of: text) == UInt8(ascii: "[") else { return .missing }
                var items: [Range<Int>] = []
                var position = range.lowerBound + 1
                if byte(position, of: text) != UInt8(ascii: "]") {
                    while true {
                        guard let end = skipValue(at: position, in: text) else { return .missing }
                        items.append(position..<end)
                        let next = byte(end, of: text)
                        if next == UInt8(ascii: "]") { break }
                        guard next == UInt8(ascii: ",") else { return .missing }
                        position = end + 1
                    }
                }
                let wanted = index < 0 ? items.count + index : index
                guard items.indices.contains(wanted) else { return .missing }
                range = items[wanted]
            }
        }
        return .found(range)
    }

    /// Where the value of the top-level `key` starts in flat text (see ``CanonicalJSONScanner/isFlat``), or `nil`
    /// when there is no such key: with no nested values and no escapes, a string holds no quote, so `"key":` after
    /// `{` or `,` can only be the key itself, and a search for the key's bytes from any offset finds it. The search
    /// starts at `from` (at least 2), and looks before it only when the key is not after it.
    private static func flatValueStart(
        _ key: UnsafeBufferPointer<UInt8>, in text: UnsafeBufferPointer<UInt8>, from start: Int = 2
    ) -> Int? {
        guard let needle = key.baseAddress, !key.isEmpty else { return nil }
        return flatValueStart(first: needle.pointee, count: key.count, in: text, from: start) { at, base in
            isFlatKey(key, at: at, in: base)
        }
    }

    /// True when `"key":` is at `at - 1` in flat text after `{` or `,`; the caller has checked that those bytes
    /// are inside the text.
    @inline(__always)
    private static func isFlatKey(_ key: UnsafeBufferPointer<UInt8>, at: Int, in base: UnsafePointer<UInt8>) -> Bool {
        base[at - 1] == UInt8(ascii: "\"") && base[at + key.count] == UInt8(ascii: "\"")
            && base[at + key.count + 1] == UInt8(ascii: ":")
            && (base[at - 2] == UInt8(ascii: "{") || base[at - 2] == UInt8(ascii: ","))
            && memcmp(base + at, key.baseAddress!, key.count) == 0
    }

    /// The search of ``flatValueStart(_:in:from:)`` for a key of `count` bytes starting with `first`, where
    /// `isKey(at, base)` says whether `"key":` is at `at - 1` after `{` or `,` (`at - 2` and `at + count + 1` are
    /// inside the text when it is called).
    @inline(__always)
    private static func flatValueStart(
        first: UInt8, count: Int, in text: UnsafeBufferPointer<UInt8>, from start: Int,
        isKey: (Int, UnsafePointer<UInt8>) -> Bool
    ) -> Int? {
        guard let base = text.baseAddress else { return nil }
        var from = max(2, start)
        for _ in 0..<2 {
            // `"key":` needs the key, a quote before it and `":` after it.
            while text.count - from >= count + 2 {
                guard let hit = memchr(base + from, Int32(first), text.count - from - count - 1) else { break }
                let at = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(hit))
                // `from >= 2` and memchr's length keep `at - 2` and `at + count + 1` inside the text.
                if isKey(at, base) { return at + count + 2 }
                from = at + 1
            }
            // Not after the hint: from the start, once.
            guard start > 2 else { return nil }
            from = 2
        }
        return nil
    }
    /// The value of `key` in flat text; `.unsupported` for the empty key, which the search cannot look for.
    private static func flatField(_ key: UnsafeBufferPointer<UInt8>, in text: UnsafeBufferPointer<UInt8>) -> Lookup {
        guard !key.isEmpty else { return .unsupported }
        guard let start = flatValueStart(key, in: text), let end = skipFlatValue(at: start, in: text) else {
            return .missing
        }
        return .found(start..<end)
    }

    /// How far before the remembered offset a field is looked for first.
    static let hintSlack = 24

    /// The value of the top-level field `locator` names, looked for first where it was found in the last event (in
    /// machine-written events a field sits at the same offset line after line), and remembering where it is now.
    static func field(
        _ locator: inout FieldLocator, in text: UnsafeBufferPointer<UInt8>, keys: KeySignature, flat: Bool
    )
        -> Lookup
    {
        guard locator.isPlain else { return .unsupported }
        // Where the hint holds, the key is there: its signature need not be asked.
        if flat, let start = hintedValueStart(locator, in: text) {
            guard let end = skipFlatValue(at: start, in: text) else { return .missing }
            return .found(start..<end)
        }
        guard keys.mayContain(hash: locator.hash) else { return .missing }
        // The empty key is looked for key by key: the search needs a first byte.
        guard flat, !locator.key.isEmpty else {
            return locator.key.withUnsafeBufferPointer { field(bytes: $0, inObjectAt: 0, of: text) }
        }
        guard let start = flatValueStart(&locator, in: text), let end = skipFlatValue(at: start, in: text) else {
            return .missing
        }
        return .found(start..<end)
    }

    /// The number or boolean in the top-level field `locator` names in flat text, read in one pass from where its
    /// value starts to the delimiter after it; `nil` when the field is missing or holds anything else (where
    /// ``scalar(_:)`` of the field's value gives `nil` too).
    static func flatScalar(_ locator: inout FieldLocator, in text: UnsafeBufferPointer<UInt8>, keys: KeySignature)
        -> Scalar?
    {
        guard locator.isPlain, !locator.key.isEmpty,
            let start = hintedValueStart(locator, in: text)
                ?? (keys.mayContain(hash: locator.hash) ? flatValueStart(&locator, in: text) : nil),
            let base = text.baseAddress, start < text.count
        else { return nil }
        let end = base + text.count
        guard let (value, stop) = leadingScalar(base + start, end), stop < end,
            stop.pointee == UInt8(ascii: ",") || stop.pointee == UInt8(ascii: "}")
        else { return nil }
        return value
    }

    /// Where the value of the top-level field `locator` names starts in flat text, for a field that is not where it
    /// was in the last event (``hintedValueStart(_:in:)``, which every caller asks first); remembers where it is now.
    private static func flatValueStart(_ locator: inout FieldLocator, in text: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let base = text.baseAddress, let first = locator.key.first else { return nil }
        let end = base + text.count
        let count = locator.key.count
        let at = locator.hint
        // Where the field moved, it moved by the lengths of the values before it: a few bytes, mostly.
        guard
            let start = flatValueStart(
                first: first, count: count, in: text, from: at - Self.hintSlack,
                isKey: { at, base in locator.isKey(at: at, in: base, end: end) })
        else { return nil }
        locator.hint = start - count - 2
        return start
    }

    /// Where the value of the top-level field `locator` names starts in flat text when the field is where it was
    /// in the last event, else `nil`.
    @inline(__always)
    private static func hintedValueStart(_ locator: FieldLocator, in text: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let base = text.baseAddress, !locator.key.isEmpty else { return nil }
        let at = locator.hint
        let count = locator.key.count
        guard at >= 2, at + count + 2 <= text.count, locator.isKey(at: at, in: base, end: base + text.count) else {
            return nil
        }
        return at + count + 2
    }

    /// The value of `key` in the object starting at `start`, whose keys are in `keys`.
    static func field(
        _ key: String, inObjectAt start: Int, of text: UnsafeBufferPointer<UInt8>, keys: KeySignature, flat: Bool
    ) -> Lookup {
        var key = key
        return key.withUTF8 { key in
            guard isPlain(key) else { return .unsupported }
            guard keys.mayContain(key) else { return .missing }
            if flat, start == 0 { return flatField(key, in: text) }
            return field(bytes: key, inObjectAt: start, of: text)
        }
    }

    /// True when canonical text writes `key` as its bytes: ASCII needing no escape.
    private static func isPlain(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
        key.allSatisfy { $0 >= 0x20 && $0 < 0x80 && $0 != 0x22 && $0 != 0x5C }
    }

    /// The value of `key`, plain ASCII bytes as canonical text writes them, in the object starting at `start`.
    private static func field(
        bytes key: UnsafeBufferPointer<UInt8>, inObjectAt start: Int, of text: UnsafeBufferPointer<UInt8>
    ) -> Lookup {
        var position = start + 1
        guard let base = text.baseAddress else { return .missing }
        while byte(position, of: text) == UInt8(ascii: "\"") {
            guard let keyEnd = skipString(at: position, in: text), byte(keyEnd, of: text) == UInt8(ascii: ":")
            else { return .missing }
            let matches =
                keyEnd - position - 2 == key.count
                && (key.isEmpty || memcmp(base + position + 1, key.baseAddress!, key.count) == 0)
            let valueStart = keyEnd + 1
            guard let valueEnd = skipValue(at: valueStart, in: text) else { return .missing }
            if matches { return .found(valueStart..<valueEnd) }
            guard byte(valueEnd, of: text) == UInt8(ascii: ",") else { return .missing }
            position = valueEnd + 1
        }
        return .missing
    }

    /// The byte at `index`, or 0 (which canonical text never holds outside strings) past the end.
    @inline(__always)
    private static func byte(_ index: Int, of text: UnsafeBufferPointer<UInt8>) -> UInt8 {
        index >= 0 && index < text.count ? text[index] : 0
    }

    /// ``skipValue(at:in:)`` in flat text, which holds no backslash and no container. A number or a literal ends at
    /// the next `,` or `}`. A string ends at the next quote: looked for here in the first four words, where the short
    /// strings keys are made of (a device, a level, a symbol) and RFC 3339 times (26 bytes quoted) end, for less than
    /// a call costs; then by `memchr` (stepping over a log line's message this way costs a fraction of the byte
    /// loop's time).
    private static func skipFlatValue(at start: Int, in text: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let base = text.baseAddress, start >= 0, start < text.count else { return nil }
        let end = base + text.count
        guard text[start] == UInt8(ascii: "\"") else {
            let delimiter = PlainBytes.first(UInt8(ascii: ","), or: UInt8(ascii: "}"), from: base + start, to: end)
            return delimiter < end ? delimiter - base : nil
        }
        let nearEnd = min(end, base + start + 33)
        let near = PlainBytes.first(UInt8(ascii: "\""), from: base + start + 1, to: nearEnd)
        if near < nearEnd { return near - base + 1 }
        guard let quote = memchr(near, Int32(UInt8(ascii: "\"")), end - near) else { return nil }
        return UnsafeRawPointer(base).distance(to: UnsafeRawPointer(quote)) + 1
    }

    /// The index just past the value starting at `start`, or `nil` when the text ends before the value does.
    static func skipValue(at start: Int, in text: UnsafeBufferPointer<UInt8>) -> Int? {
        guard start >= 0, start < text.count else { return nil }
        switch text[start] {
        case UInt8(ascii: "\""):
            return skipString(at: start, in: text)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var position = start
            while position < text.count {
                switch text[position] {
                case UInt8(ascii: "\""):
                    guard let end = skipString(at: position, in: text) else { return nil }
                    position = end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return position + 1 }
                default:
                    break
                }
                position += 1
            }
            return nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            // `-?digits(.digits)?`, and an exponent where the writer writes one (`1e-05`).
            let base = text.baseAddress!
            let end = base + text.count
            var position = PlainBytes.skipDigits(from: base + start + 1, to: end)
            if position < end, position.pointee == UInt8(ascii: ".") {
                position = PlainBytes.skipDigits(from: position + 1, to: end)
            }
            if position < end, position.pointee | 0x20 == UInt8(ascii: "e") {
                position += 1
                if position < end, position.pointee == UInt8(ascii: "+") || position.pointee == UInt8(ascii: "-") {
                    position += 1
                }
                position = PlainBytes.skipDigits(from: position, to: end)
            }
            return position - base
        default:
            // A literal runs to the next delimiter or the end.
            var position = start + 1
            while position < text.count {
                let byte = text[position]
                if byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") { break }
                position += 1
            }
            return position
        }
    }

    /// The index just past the string whose opening quote is at `start`, or `nil` when the text ends first.
    private static func skipString(at start: Int, in text: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let base = text.baseAddress, start >= 0, start < text.count else { return nil }
        let end = base + text.count
        var position = base + start + 1
        while position < end {
            position = PlainBytes.skip(from: position, to: end)
            guard position < end else { return nil }
            let byte = position.pointee
            if byte == UInt8(ascii: "\"") { return position - base + 1 }
            position += byte == UInt8(ascii: "\\") ? 2 : 1
        }
        return nil
    }

    /// The number or boolean written in `text`, read without a JSON reader; `nil` for anything else. Numbers are
    /// the commonest fields a stage reads: an integer of at most 18 digits (so it fits), or `-?digits.digits` with
    /// at most 15 digits, whose digits, as an integer below 10^15 (exact in a double), are divided once by an exact
    /// power of ten, so the result is the correctly rounded double (Clinger's fast path), the same as the reader's.
    static func scalar(_ text: UnsafeBufferPointer<UInt8>) -> Scalar? {
        guard let start = text.baseAddress, let (value, stop) = leadingScalar(start, start + text.count),
            stop == start + text.count
        else { return nil }
        return value
    }

    /// The number or boolean whose text starts at `start`, and where it stops (at the first byte that cannot go on
    /// with it, or `end`); `nil` for anything else, and for a number the JSON reader must read (an exponent, 19 or
    /// more digits, 16 or more with a fraction).
    @inline(__always)
    private static func leadingScalar(_ start: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>)
        -> (Scalar, UnsafePointer<UInt8>)?
    {
        guard start < end else { return nil }
        let first = start.pointee
        if first == UInt8(ascii: "t") || first == UInt8(ascii: "f") {
            let word = first == UInt8(ascii: "t") ? "true" : "false"
            let length = word.utf8.count
            guard end - start >= length, zip(word.utf8, UnsafeBufferPointer(start: start, count: length)).allSatisfy(==)
            else { return nil }
            return (.bool(first == UInt8(ascii: "t")), start + length)
        }
        var position = start
        let negative = first == UInt8(ascii: "-")
        if negative { position += 1 }
        // Most numbers are read whole from one or two loads: up to seven digits, then up to seven after a point.
        // The loop below reads the rest, and gives the same answer for these.
        if let whole = PlainBytes.digits(at: position, to: end) {
            let point = position + whole.count
            guard point.pointee == UInt8(ascii: ".") else {
                return (.int(negative ? -whole.value : whole.value), point)
            }
            if let fraction = PlainBytes.digits(at: point + 1, to: end) {
                let scale = powerOfTen(fraction.count)
                let value = Double(whole.value &* Int64(scale) &+ fraction.value) / scale
                return (.double(negative ? -value : value), point + 1 + fraction.count)
            }
        }
        var mantissa: Int64 = 0
        var digits = 0
        var fractionDigits = -1
        while position < end {
            let byte = position.pointee
            if byte == UInt8(ascii: "."), fractionDigits < 0 {
                fractionDigits = 0
                position += 1
                continue
            }
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            // Anything longer is for the JSON reader.
            guard digits < 18 else { return nil }
            mantissa = mantissa &* 10 &+ Int64(digit)
            digits += 1
            if fractionDigits >= 0 { fractionDigits += 1 }
            position += 1
        }
        if fractionDigits < 0 {
            guard digits > 0 else { return nil }
            return (.int(negative ? -mantissa : mantissa), position)
        }
        guard fractionDigits > 0, digits <= 15 else { return nil }
        let value = Double(mantissa) / powerOfTen(fractionDigits)
        return (.double(negative ? -value : value), position)
    }

    /// The string written in `text` when it has no escape: its bytes between the quotes, which in event text are
    /// valid UTF-8 (the scanner checked them, or the writer wrote them), so no reader is needed.
    static func plainString(_ text: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        plainContents(of: text, flat: false).map { .string(String(decoding: $0, as: UTF8.self)) }
    }

    /// The bytes between the quotes of the string `value` (a value's text), when it is one written without escapes;
    /// `nil` otherwise. Flat text holds no backslash anywhere; in other text `memchr` looks for one.
    static func plainContents(of value: UnsafeBufferPointer<UInt8>, flat: Bool) -> UnsafeBufferPointer<UInt8>? {
        guard value.count >= 2, value[0] == UInt8(ascii: "\""), value[value.count - 1] == UInt8(ascii: "\"") else {
            return nil
        }
        let body = UnsafeBufferPointer(rebasing: value[1..<(value.count - 1)])
        guard flat || memchr(value.baseAddress! + 1, Int32(UInt8(ascii: "\\")), body.count) == nil else {
            return nil
        }
        return body
    }

    /// 10^exponent for 0 through 18, each exact in a double (a switch: a static table is reached through a
    /// once-guard at every read). The number reader and ``JSONWriter`` use it.
    @inline(__always)
    static func powerOfTen(_ exponent: Int) -> Double {
        switch exponent {
        case 0: 1
        case 1: 10
        case 2: 100
        case 3: 1e3
        case 4: 1e4
        case 5: 1e5
        case 6: 1e6
        case 7: 1e7
        case 8: 1e8
        case 9: 1e9
        case 10: 1e10
        case 11: 1e11
        case 12: 1e12
        case 13: 1e13
        case 14: 1e14
        case 15: 1e15
        case 16: 1e16
        case 17: 1e17
        default: 1e18
        }
    }

    /// Appends `"key":value` to the canonical object `text`, which must not have `key`; the result is canonical.
    static func appendField(_ key: UnsafeBufferPointer<UInt8>, _ value: JSONValue, to text: inout [UInt8]) {
        if text.count > 2, let scalar = Scalar(value) { return appendField(key, scalar, to: &text) }
        // `{}` loses its brace; any other object's becomes the comma before the new field.
        if text.count > 2 { text[text.count - 1] = UInt8(ascii: ",") } else { text.removeLast() }
        text.append(UInt8(ascii: "\""))
        text.append(contentsOf: key)
        text.append(UInt8(ascii: "\""))
        text.append(UInt8(ascii: ":"))
        JSONWriter.write(value, to: &text)
        text.append(UInt8(ascii: "}"))
    }

    /// ``appendField(_:_:to:)`` for a number or a boolean, to object text that has other fields: written straight
    /// into the text's room (each append checks the array's uniqueness and room: six of them per field were a
    /// fifth of a chain of maps' time, and one through a scratch buffer still copied the field twice).
    static func appendField(_ key: UnsafeBufferPointer<UInt8>, _ value: Scalar, to text: inout [UInt8]) {
        appendField(keyCount: key.count + 3, value, to: &text) { field in
            field[0] = UInt8(ascii: "\"")
            if let start = key.baseAddress { (field + 1).initialize(from: start, count: key.count) }
            field[key.count + 1] = UInt8(ascii: "\"")
            field[key.count + 2] = UInt8(ascii: ":")
        }
    }

    /// ``appendField(_:_:to:)`` for the key `locator` names: `"key":` written as the one or two words of its pattern
    /// (keys of up to 13 bytes), not byte by byte around a copy of the key (a call to `memmove` for a few bytes).
    static func appendField(_ locator: FieldLocator, _ value: Scalar, to text: inout [UInt8]) {
        guard locator.pattern.count <= 16 else {
            return locator.key.withUnsafeBufferPointer { appendField($0, value, to: &text) }
        }
        appendField(keyCount: locator.pattern.count, value, to: &text) { locator.pattern.write(to: $0) }
    }

    /// Appends `,` and the field whose `"key":` (`keyCount` bytes) `writeKey` writes, then `value`, in place of the
    /// closing brace, and the brace after it.
    @inline(__always)
    private static func appendField(
        keyCount: Int, _ value: Scalar, to text: inout [UInt8], writeKey: (UnsafeMutablePointer<UInt8>) -> Void
    ) {
        text[text.count - 1] = UInt8(ascii: ",")
        var written = true
        // At least 16 bytes before the value's room, for a key written in words.
        text.append(addingCapacity: max(keyCount, 16) + 1 + JSONWriter.scalarCapacity) { room in
            room.withUnsafeMutableBufferPointer { buffer, count in
                let field = buffer.baseAddress!
                writeKey(field)
                guard let valueCount = JSONWriter.write(scalar: value, into: field + keyCount) else {
                    count = keyCount
                    written = false
                    return
                }
                field[keyCount + valueCount] = UInt8(ascii: "}")
                count = keyCount + valueCount + 1
            }
        }
        guard !written else { return }
        // A double only `description` writes.
        JSONWriter.write(value.value, to: &text)
        text.append(UInt8(ascii: "}"))
    }
}
