internal import SluiceCore

#if canImport(Glibc)
    internal import Glibc
#endif

/// The simulated devices: each moves smoothly inside a circle, turns back near its edge, reports its position with
/// a few metres of GPS noise, and carries sensors that drift slowly, occasionally spike or drop out.
struct Fleet {
    private struct Device {
        let name: String
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
    private var random: SeededRandom
    private var next = 0
    private let center: (lat: Double, lon: Double)
    private let radius: Double
    private let anomalies: SimulatorSourceConfig.Anomalies
    private var timestamps = RFC3339.Formatter()

    init(_ config: SimulatorSourceConfig, seed: UInt64) {
        var random = SeededRandom(seed: seed)
        center = (config.centerLat, config.centerLon)
        radius = config.radiusMetres
        anomalies = config.anomalies
        devices = (0..<config.devices).map { index in
            // Uniform over the disc, well inside the edge.
            let distance = config.radiusMetres * 0.8 * random.unit().squareRoot()
            let bearing = random.unit() * 2 * Double.pi
            let position = Fleet.offset(config.centerLat, config.centerLon, metres: distance, bearing: bearing)
            let base = random.gaussian(21, 3)
            let digits = String(index)
            return Device(
                name: "dev-" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits,
                lat: position.lat, lon: position.lon, speed: random.unit() * 15, heading: random.unit() * 360,
                temperature: base, baseTemperature: base, humidity: random.gaussian(45, 8).clamped(5, 95),
                battery: 0.7 + random.unit() * 0.3)
        }
        self.random = random
    }

    /// The next reading, from the next device in turn, `elapsed` seconds after that device's previous one.
    mutating func nextReading(timestampMillis: Int64, elapsed: Double) -> JSONValue {
        let index = next
        next = (next + 1) % devices.count
        var device = devices[index]
        let dt = min(max(elapsed, 0.001), 10)

        // Motion: speed and heading change smoothly; near the edge, head back towards the centre.
        device.speed = (device.speed + random.gaussian(0, 0.8) * dt.squareRoot()).clamped(0, 25)
        device.heading = (device.heading + random.gaussian(0, 8) * dt.squareRoot()).normalizedDegrees
        let moved = Fleet.offset(device.lat, device.lon, metres: device.speed * dt, bearing: device.heading * .pi / 180)
        let fromCenter = Geo.distanceMetres(lat1: center.lat, lon1: center.lon, lat2: moved.lat, lon2: moved.lon)
        if fromCenter > radius * 0.9 {
            device.heading = (Fleet.bearing(from: moved, to: center) + random.gaussian(0, 20)).normalizedDegrees
        }
        if fromCenter < radius * 0.98 { (device.lat, device.lon) = moved }

        // Reported position: GPS noise of a few metres, never outside the circle.
        var reported = Fleet.offset(
            device.lat, device.lon, metres: abs(random.gaussian(0, 3)), bearing: random.unit() * 2 * .pi)
        if Geo.distanceMetres(lat1: center.lat, lon1: center.lon, lat2: reported.lat, lon2: reported.lon) > radius {
            reported = (device.lat, device.lon)
        }

        // Sensors drift back towards their base with noise; the battery drains with use.
        device.temperature += 0.05 * (device.baseTemperature - device.temperature) + random.gaussian(0, 0.15)
        device.humidity = (device.humidity + random.gaussian(0, 0.3)).clamped(0, 100)
        device.battery = max(0, device.battery - 0.00002 * (1 + device.speed / 10))

        var temperature = device.temperature
        if random.chance(anomalies.spikeProbability) { temperature = 85 + random.unit() * 65 }
        var fields: [JSONObject.Field] = [
            .init(key: "device", value: .string(device.name)),
            .init(key: "seq", value: .int(device.seq)),
            .init(key: "ts", value: .string(timestamps.format(epochMillis: timestampMillis))),
            .init(key: "lat", value: .double(reported.lat.rounded(to: 6))),
            .init(key: "lon", value: .double(reported.lon.rounded(to: 6))),
            .init(key: "speed_mps", value: .double(device.speed.rounded(to: 1))),
            .init(key: "heading_deg", value: .double(device.heading.rounded(to: 1))),
            .init(key: "temperature", value: .double(temperature.rounded(to: 1))),
            .init(key: "humidity", value: .double(device.humidity.rounded(to: 1))),
            .init(key: "battery", value: .double(device.battery.rounded(to: 3))),
        ]
        if random.chance(anomalies.dropoutProbability) {
            fields.remove(at: 7 + Int(random.next() % 3))
        }
        device.seq += 1
        devices[index] = device
        return .object(JSONObject(uniqueFields: fields))
    }

    /// The point `metres` away from (`lat`, `lon`) along `bearing` (radians), on a sphere.
    static func offset(_ lat: Double, _ lon: Double, metres: Double, bearing: Double) -> (lat: Double, lon: Double) {
        let angular = metres / Geo.earthRadiusMetres
        let phi = lat * .pi / 180
        let lambda = lon * .pi / 180
        let newPhi = asin(sin(phi) * cos(angular) + cos(phi) * sin(angular) * cos(bearing))
        let newLambda = lambda + atan2(sin(bearing) * sin(angular) * cos(phi), cos(angular) - sin(phi) * sin(newPhi))
        return (newPhi * 180 / .pi, newLambda * 180 / .pi)
    }

    /// The initial bearing from one point to another, in degrees.
    static func bearing(from a: (lat: Double, lon: Double), to b: (lat: Double, lon: Double)) -> Double {
        let phi1 = a.lat * .pi / 180
        let phi2 = b.lat * .pi / 180
        let dLambda = (b.lon - a.lon) * .pi / 180
        let y = sin(dLambda) * cos(phi2)
        let x = cos(phi1) * sin(phi2) - sin(phi1) * cos(phi2) * cos(dLambda)
        return atan2(y, x) * 180 / .pi
    }
}

extension Double {
    fileprivate func clamped(_ low: Double, _ high: Double) -> Double { Swift.min(high, Swift.max(low, self)) }

    fileprivate var normalizedDegrees: Double {
        let value = truncatingRemainder(dividingBy: 360)
        return value < 0 ? value + 360 : value
    }

    fileprivate func rounded(to digits: Int) -> Double {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        return (self * scale).rounded() / scale
    }
}
