internal import SluiceCore

/// Fuzz target for the JSON reader and writer.
///
/// Any bytes must either be rejected with a `JSONError` or parse into a value whose written form parses back to
/// the same value: reader and writer agree, and neither traps on hostile input. Bytes the canonical scanner
/// accepts must be exactly what the writer writes for their value (events keep such bytes instead of a value),
/// and a field read from them must equal the field of the parsed value. The scanner is kept from input to input,
/// as a source keeps it from line to line (it compares each object's keys with the last one's): its verdict must
/// be a fresh scanner's.
nonisolated(unsafe) var canonicalScanner = CanonicalJSONScanner()

func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let canonical = canonicalScanner.isCanonical(bytes)
    var fresh = CanonicalJSONScanner()
    precondition(fresh.isCanonical(bytes) == canonical, "the scanner's verdict depends on the text before")
    if canonical {
        precondition(
            fresh.topLevelKeys == canonicalScanner.topLevelKeys && fresh.isFlat == canonicalScanner.isFlat,
            "the scanner's key signature or flatness depends on the text before")
    }
    let value: JSONValue
    do {
        value = try JSONReader.parse(bytes)
    } catch {
        precondition(!canonical, "the scanner accepted invalid JSON: \(error)")
        _ = error.description
        return 0
    }
    var written: [UInt8] = []
    JSONWriter.write(value, to: &written)
    let reread: JSONValue
    do {
        reread = try JSONReader.parse(written)
    } catch {
        fatalError("the writer's output does not parse (\(error)): \(String(decoding: written, as: UTF8.self))")
    }
    precondition(reread == value, "round trip changed the value: \(String(decoding: written, as: UTF8.self))")
    if canonical {
        precondition(written.elementsEqual(bytes), "canonical bytes are not what the writer writes")
        let event = Event(
            canonicalJSON: Array(bytes), topLevelKeys: canonicalScanner.topLevelKeys, isFlat: canonicalScanner.isFlat)
        if case .object(let object) = value {
            for field in object.fields {
                precondition(event.lookup([.key(field.key)]) == field.value, "a field read from text differs")
            }
        }
    }
    return 0
}
