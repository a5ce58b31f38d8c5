#if canImport(Glibc)
    internal import Glibc
#endif

/// The string functions' searches, on UTF-8 bytes as grep and Vector search: `memchr` and `memcmp` find a part
/// without the grapheme-by-grapheme comparison of Swift's `String.contains`, which cost 8 µs a 100-byte line. On valid UTF-8,
/// a byte match of a whole string is always a match of whole characters' code points.
extension String {
    /// The byte ranges of the non-overlapping occurrences of `part` (not empty), from the start.
    func utf8Ranges(of part: String) -> [Range<Int>] {
        var text = self
        var part = part
        return text.withUTF8 { text in
            part.withUTF8 { part in
                var ranges: [Range<Int>] = []
                var start = 0
                while let found = StringBytes.find(part, in: text, from: start) {
                    ranges.append(found..<found + part.count)
                    start = found + part.count
                }
                return ranges
            }
        }
    }

    /// True when `part` occurs in the string (always for an empty part).
    func utf8Contains(_ part: String) -> Bool {
        guard !part.isEmpty else { return true }
        var text = self
        var part = part
        return text.withUTF8 { text in part.withUTF8 { part in StringBytes.find(part, in: text, from: 0) != nil } }
    }

    func utf8HasPrefix(_ prefix: String) -> Bool { utf8.starts(with: prefix.utf8) }

    func utf8HasSuffix(_ suffix: String) -> Bool {
        utf8.count >= suffix.utf8.count && utf8.dropFirst(utf8.count - suffix.utf8.count).elementsEqual(suffix.utf8)
    }

    /// The string with every occurrence of `target` (not empty) replaced.
    func utf8Replacing(_ target: String, with replacement: String) -> String {
        let ranges = utf8Ranges(of: target)
        guard !ranges.isEmpty else { return self }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count + ranges.count * max(0, replacement.utf8.count - target.utf8.count))
        var text = self
        text.withUTF8 { text in
            var start = 0
            for range in ranges {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[start..<range.lowerBound]))
                bytes.append(contentsOf: replacement.utf8)
                start = range.upperBound
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[start...]))
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The parts between occurrences of `separator` (not empty), empty ones included.
    func utf8Split(_ separator: String) -> [String] {
        let ranges = utf8Ranges(of: separator)
        var text = self
        return text.withUTF8 { text in
            var parts: [String] = []
            parts.reserveCapacity(ranges.count + 1)
            var start = 0
            for range in ranges {
                parts.append(
                    String(decoding: UnsafeBufferPointer(rebasing: text[start..<range.lowerBound]), as: UTF8.self))
                start = range.upperBound
            }
            parts.append(String(decoding: UnsafeBufferPointer(rebasing: text[start...]), as: UTF8.self))
            return parts
        }
    }
}

/// Searches of UTF-8 bytes.
enum StringBytes {
    /// `contains`, `starts_with` or `ends_with` of `text` and `part`.
    static func test(_ function: ExpressionFunction, _ text: UnsafeRawBufferPointer, _ part: String) -> Bool {
        var part = part
        return part.withUTF8 { part in test(function, text, part, anchor: rarestByte(part)) }
    }

    /// ``test(_:_:_:)`` with the part's bytes, and `anchor`, its ``rarestByte(_:)``, found once.
    static func test(
        _ function: ExpressionFunction, _ text: UnsafeRawBufferPointer, _ part: UnsafeBufferPointer<UInt8>, anchor: Int
    ) -> Bool {
        let text = text.assumingMemoryBound(to: UInt8.self)
        switch function {
        case .starts_with: return text.count >= part.count && text.prefix(part.count).elementsEqual(part)
        case .ends_with: return text.count >= part.count && text.suffix(part.count).elementsEqual(part)
        default: return part.isEmpty || find(part, in: text, from: 0, anchor: anchor) != nil
        }
    }

    /// The first occurrence of `part` at or after `start`: `memchr` for its least common byte (vectorised in
    /// glibc), then `memcmp` for the whole. (glibc's `memmem` is a GNU extension the Glibc module does not export.)
    /// The anchor matters: in `" ERROR "` the first byte is a space, which text holds every few bytes, and each
    /// false hit costs a call; the `E` is rare.
    static func find(
        _ part: UnsafeBufferPointer<UInt8>, in text: UnsafeBufferPointer<UInt8>, from start: Int, anchor: Int? = nil
    ) -> Int? {
        guard let base = text.baseAddress, let needle = part.baseAddress, !part.isEmpty else { return nil }
        let anchor = anchor ?? rarestByte(part)
        let anchorByte = Int32(needle[anchor])
        var position = start
        while text.count - position >= part.count {
            let window = text.count - position - part.count + 1
            guard let hit = memchr(base + position + anchor, anchorByte, window) else { return nil }
            let found = base.distance(to: hit.assumingMemoryBound(to: UInt8.self)) - anchor
            if memcmp(base + found, needle, part.count) == 0 { return found }
            position = found + 1
        }
        return nil
    }

    /// The index of the byte of `part` that text is least likely to hold, by a rough order of how common bytes are
    /// in text: spaces, then lower-case letters, digits, other ASCII, upper-case letters, then non-ASCII bytes.
    static func rarestByte(_ part: UnsafeBufferPointer<UInt8>) -> Int {
        func rank(_ byte: UInt8) -> Int {
            switch byte {
            case UInt8(ascii: " "): 0
            case UInt8(ascii: "a")...UInt8(ascii: "z"): 1
            case UInt8(ascii: "0")...UInt8(ascii: "9"): 2
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): 4
            case 0x80...: 5
            default: 3
            }
        }
        var best = 0
        for index in part.indices where rank(part[index]) > rank(part[best]) { best = index }
        return best
    }
}
