internal import SluiceCore

/// Fuzz target for the JSON reader and writer.
///
/// Any bytes must either be rejected with a `JSONError` or parse into a value whose written form parses back to
/// the same value: reader and writer agree, and neither traps on hostile input.
func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let value: JSONValue
    do {
        value = try JSONReader.parse(bytes)
    } catch {
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
    return 0
}
