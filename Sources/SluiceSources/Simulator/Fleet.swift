internal import SluiceCore

#if canImport(Glibc)
    internal import Glibc
#endif

/// The simulated devices: each moves smoothly inside a circle, turns back near its edge, reports its position with
/// a few metres of GPS noise, and carries sensors that drift slowly, occasionally spike or drop out.
///
/// Built for speed, since `rate: max` is how users measure the rest of a pipeline: a reading is written straight
/// into canonical JSON text (no parsed value, no `Double.description`), steps are small enough to move on the
/// tangent plane (table sines, no `asin`/`atan2`), and normal noise comes from a quantile table. The exact
/// spherical distance is computed only near the edge of the circle.
struct Fleet {
    /// Plain values only, so that reading and writing one back copies no references.
    private struct Device {
        var seq: Int64 = 0
        var lat: Double
        var lon: Double
        var speed: Double
        var heading: Double
        var temperature: Double
        let baseTemperature: Double
        var humidity: Double
        var battery: Double
    }

    private var devices: [Device]
    /// Per device, `{"device":"dev-0001","seq":`: the constant start of every reading.
    private var openings: [[UInt8]]
    private var random: SeededRandom
    private var next = 0
    private let center: (lat: Double, lon: Double)
    private let radius: Double
    private let anomalies: SimulatorSourceConfig.Anomalies
    private var timestamps = RFC3339.Formatter()
    /// The top-level keys of a reading, with and without each field that drops out.
    private let keys: KeySignature

    init(_ config: SimulatorSourceConfig, seed: UInt64) {
        var random = SeededRandom(seed: seed)
        center = (config.centerLat, config.centerLon)
        radius = config.radiusMetres
        anomalies = config.anomalies
        var openings: [[UInt8]] = []
        devices = (0..<config.devices).map { index in
            // Uniform over the disc, well inside the edge.
            let distance = config.radiusMetres * 0.8 * random.unit().squareRoot()
            let bearing = random.unit() * 360
            let position = Geo.step(config.centerLat, config.centerLon, metres: distance, bearingDegrees: bearing)
            let base = random.gaussian(21, 3)
            let digits = String(index)
            let name = "dev-" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
            var opening = Array(#"{"device":"#.utf8)
            JSONWriter.writeString(name, to: &opening)
            opening.append(contentsOf: #","seq":"#.utf8)
            openings.append(opening)
            return Device(
                lat: position.lat, lon: position.lon, speed: random.unit() * 15,
                heading: random.unit() * 360, temperature: base, baseTemperature: base,
                humidity: random.gaussian(45, 8).clamped(5, 95), battery: 0.7 + random.unit() * 0.3)
        }
        self.random = random
        self.openings = openings
        keys = KeySignature(keys: Self.fieldNames)
    }

    /// Gives the devices from `start` on to a new fleet, which draws from a random stream of its own, seeded from
    /// this one's. Call before any reading, with `start` inside the fleet.
    mutating func splitOff(from start: Int) -> Fleet {
        precondition(start > 0 && start < devices.count, "A fleet splits inside its devices.")
        var upper = self
        upper.devices = Array(devices[start...])
        upper.openings = Array(openings[start...])
        upper.random = SeededRandom(seed: random.next())
        devices.removeSubrange(start...)
        openings.removeSubrange(start...)
        return upper
    }

    /// The number of devices.
    var deviceCount: Int { devices.count }

    /// A reading's bytes after its opening, at most: `seq` (20), `,"ts":"` (7), the time with its `Z"` (32 with a
    /// year of 11 digits), the seven fields' keys (80) and values (25 each, the longest a double's text can be),
    /// the closing brace.
    private static let maxBytesAfterOpening = 20 + 7 + 32 + 80 + 7 * 25 + 1

    private static let fieldNames = [
        "device", "seq", "ts", "lat", "lon", "speed_mps", "heading_deg", "temperature", "humidity", "battery",
    ]

    /// The next reading, from the next device in turn, `elapsed` seconds after that device's previous one; its
    /// text is written into a buffer from `spare` when it has one.
    mutating func nextReading(
        timestampMillis: Int64, elapsed: Double, ingestNanos: UInt64, reusing spare: inout SpareTexts
    ) -> Event {
        let index = next
        next = (next + 1) % devices.count
        var device = devices[index]
        let dt = min(max(elapsed, 0.001), 10)
        let rootDt = dt.squareRoot()

        // Motion: speed and heading change smoothly; near the edge, head back towards the centre.
        device.speed = (device.speed + random.gaussian(0, 0.8) * rootDt).clamped(0, 25)
        device.heading = (device.heading + random.gaussian(0, 8) * rootDt).normalizedDegrees
        let moved = Geo.step(device.lat, device.lon, metres: device.speed * dt, bearingDegrees: device.heading)
        let fromCenter = distanceFromCenter(moved.lat, moved.lon)
        if fromCenter > radius * 0.9 {
            device.heading = (bearingToCenter(from: moved) + random.gaussian(0, 20)).normalizedDegrees
        }
        if fromCenter < radius * 0.98 { (device.lat, device.lon) = moved }

        // Reported position: GPS noise of a few metres, never outside the circle.
        var reported = Geo.step(
            device.lat, device.lon, metres: abs(random.gaussian(0, 3)), bearingDegrees: random.unit() * 360)
        if distanceFromCenter(reported.lat, reported.lon) > radius { reported = (device.lat, device.lon) }

        // Sensors drift back towards their base with noise; the battery drains with use.
        device.temperature += 0.05 * (device.baseTemperature - device.temperature) + random.gaussian(0, 0.15)
        device.humidity = (device.humidity + random.gaussian(0, 0.3)).clamped(0, 100)
        device.battery = max(0, device.battery - 0.00002 * (1 + device.speed / 10))

        var temperature = device.temperature
        if random.chance(anomalies.spikeProbability) { temperature = 85 + random.unit() * 65 }
        // One of temperature, humidity and battery goes missing now and then.
        let dropped = random.chance(anomalies.dropoutProbability) ? Int(random.next() % 3) : -1

        // Written straight into the buffer the event keeps: copied from scratch memory, a reading took 7 % longer.
        var text = spare.next()
        // The opening is retained and released around this borrow; in one flat array of all openings it was not,
        // and the time stayed the same.
        openings[index].withUnsafeBufferPointer { opening in
            text.append(addingCapacity: opening.count + Self.maxBytesAfterOpening) { room in
                room.withUnsafeMutableBufferPointer { buffer, count in
                    var out = TextWriter(buffer.baseAddress!)
                    out.append(opening)
                    out.appendInteger(device.seq)
                    out.append(#","ts":""#)
                    // Lent where it is cached: returned as an array, it was retained and released for every reading.
                    timestamps.withParts(epochMillis: timestampMillis) { secondText, milli in
                        out.append(secondText)
                        out.appendDigits(UInt64(milli), width: 3)
                    }
                    out.append(#"Z""#)
                    out.appendField(#","lat":"#, reported.lat, decimals: 6)
                    out.appendField(#","lon":"#, reported.lon, decimals: 6)
                    out.appendField(#","speed_mps":"#, device.speed, decimals: 1)
                    out.appendField(#","heading_deg":"#, device.heading, decimals: 1)
                    if dropped != 0 { out.appendField(#","temperature":"#, temperature, decimals: 1) }
                    if dropped != 1 { out.appendField(#","humidity":"#, device.humidity, decimals: 1) }
                    if dropped != 2 { out.appendField(#","battery":"#, device.battery, decimals: 3) }
                    out.append("}")
                    assert(out.count <= buffer.count, "a reading is longer than maxBytesAfterOpening allows")
                    count = out.count
                }
            }
        }

        device.seq += 1
        devices[index] = device
        // A dropped key only makes the signature say "maybe" for it, never "no" for a key that is there.
        // Readings are flat: numbers and plain strings only.
        return Event(canonicalJSON: text, topLevelKeys: keys, isFlat: true, ingestNanos: ingestNanos)
    }

    /// Metres from the centre: a flat approximation, and the exact spherical distance only where it matters.
    private func distanceFromCenter(_ lat: Double, _ lon: Double) -> Double {
        let north = (lat - center.lat) * Geo.metresPerDegree
        let east = (lon - center.lon) * Geo.metresPerDegree * Geo.cosDegrees((lat + center.lat) / 2)
        let flat = (north * north + east * east).squareRoot()
        if flat < radius * 0.8 { return flat }
        return Geo.distanceMetres(lat1: center.lat, lon1: center.lon, lat2: lat, lon2: lon)
    }

    /// The compass bearing from a point to the centre, in degrees (only called near the edge).
    private func bearingToCenter(from point: (lat: Double, lon: Double)) -> Double {
        let north = (center.lat - point.lat) * Geo.metresPerDegree
        let east = (center.lon - point.lon) * Geo.metresPerDegree * Geo.cosDegrees((point.lat + center.lat) / 2)
        return atan2(east, north) * 180 / .pi
    }
}

/// Writes a reading's text into the room reserved for it with plain stores: a reading is about 60 small pieces, and
/// appending them to an array one by one cost more than the whole simulation step.
private struct TextWriter {
    private let base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0

    init(_ base: UnsafeMutablePointer<UInt8>) { self.base = base }

    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let start = bytes.baseAddress else { return }
        (base + count).update(from: start, count: bytes.count)
        count += bytes.count
    }

    mutating func append(_ text: StaticString) {
        (base + count).update(from: text.utf8Start, count: text.utf8CodeUnitCount)
        count += text.utf8CodeUnitCount
    }

    mutating func appendInteger(_ value: Int64) {
        count += JSONWriter.write(value, into: base + count)
    }

    /// `value` in exactly `width` digits, with leading zeros (as `JSONWriter` writes them).
    mutating func appendDigits(_ value: UInt64, width: Int) {
        JSONWriter.writeDigits(value, width: width, into: base + count)
        count += width
    }

    /// Appends `key` (`,"name":`) and `value` rounded to `decimals` places (1, 3 or 6), as the shortest text that
    /// reads back as that rounded double: what `JSONWriter` writes for it, without `Double.description`.
    mutating func appendField(_ key: StaticString, _ value: Double, decimals: Int) {
        append(key)
        // A constant unit in each case lets the compiler turn the divisions into multiplications.
        switch decimals {
        case 1: appendFixed(value, decimals: 1, unit: 10)
        case 3: appendFixed(value, decimals: 3, unit: 1000)
        default: appendFixed(value, decimals: 6, unit: 1_000_000)
        }
    }

    @inline(__always)
    private mutating func appendFixed(_ value: Double, decimals: Int, unit: UInt64) {
        let scaled = value * Double(unit)
        // Below 0.0001 Swift writes an exponent, and huge values are not readings: let the writer do those.
        guard abs(scaled) < 1e15, abs(scaled) >= 1e-4 * Double(unit) || abs(scaled) < 0.5 else {
            var written: [UInt8] = []
            JSONWriter.write(.double(scaled.rounded() / Double(unit)), to: &written)
            return written.withUnsafeBufferPointer { append($0) }
        }
        let units = Int64(scaled + (scaled < 0 ? -0.5 : 0.5))
        if units < 0 {
            base[count] = UInt8(ascii: "-")
            count += 1
        }
        let magnitude = units.magnitude
        appendInteger(Int64(magnitude / unit))
        base[count] = UInt8(ascii: ".")
        count += 1
        var fraction = magnitude % unit
        var width = decimals
        if fraction == 0 { width = 1 }
        while fraction > 0, fraction % 10 == 0 {
            fraction /= 10
            width -= 1
        }
        appendDigits(fraction, width: width)
    }

}

extension Geo {
    /// Metres in one degree of latitude (and of longitude on the equator).
    static let metresPerDegree = earthRadiusMetres * .pi / 180

    /// The point `metres` away along `bearingDegrees`, on the tangent plane: exact enough for a step of a few
    /// hundred metres, and free of `asin` and `atan2`.
    static func step(_ lat: Double, _ lon: Double, metres: Double, bearingDegrees: Double) -> (lat: Double, lon: Double)
    {
        let north = metres * cosDegrees(bearingDegrees)
        let east = metres * sinDegrees(bearingDegrees)
        let newLat = (lat + north / metresPerDegree).clamped(-89.9, 89.9)
        return (newLat, lon + east / (metresPerDegree * cosDegrees((lat + newLat) / 2)))
    }

    /// The sine of an angle in degrees, from a table of 4,096 steps per turn (error below 3e-7).
    static func sinDegrees(_ degrees: Double) -> Double {
        let position = degrees * (Double(sineSteps) / 360)
        let whole = position.rounded(.down)
        let index = Int(truncatingIfNeeded: Int64(whole)) & (sineSteps - 1)
        let fraction = position - whole
        return sines[index] + (sines[index + 1] - sines[index]) * fraction
    }

    static func cosDegrees(_ degrees: Double) -> Double { sinDegrees(degrees + 90) }

    private static let sineSteps = 4096
    private static let sines: [Double] = (0...sineSteps).map { sin(Double($0) * 2 * .pi / Double(sineSteps)) }
}

extension Double {
    fileprivate func clamped(_ low: Double, _ high: Double) -> Double { Swift.min(high, Swift.max(low, self)) }

    fileprivate var normalizedDegrees: Double {
        let value = truncatingRemainder(dividingBy: 360)
        return value < 0 ? value + 360 : value
    }
}
