internal import SluiceCore

/// Keeps an event unless its key was seen within the TTL; every sighting, kept or not, makes the key the most
/// recently seen and restarts its TTL. At `max_keys` the least recently seen key is forgotten (counted), so a
/// forgotten key's next event passes again.
struct DedupeTransform: Transform {
    let config: DedupeTransformConfig
    var errors: EvaluationErrorLog
    var keys: KeyReader
    /// Each remembered key's last sighting, in wall-clock milliseconds.
    var seen = RecentKeys<Int64>()
    var forgotten = 0

    init(config: DedupeTransformConfig, errors: EvaluationErrorLog) {
        self.config = config
        self.errors = errors
        keys = KeyReader(config.fields)
    }

    var state: TransformState? { TransformState(name: "state_keys", size: seen.count, evictedTotal: forgotten) }

    mutating func process(_ events: inout [Event], _ pass: inout TransformPass) {
        let now = pass.nowMillis
        if let ttl = config.ttlMillis {
            // Keys past their TTL go first (they are the least recently seen), so the count is what is remembered.
            while let last = seen.oldestValue, now - last >= ttl { seen.removeOldest() }
        }
        events.retainEvents { event in
            let key: KeyFingerprint
            do throws(EvaluationError) {
                key = try keys.read(event)
            } catch {
                pass.discards[.error] += 1
                errors.report(error, in: "dedupe fields")
                return false
            }
            if let last = seen.use(key) {
                seen.setNewest(now)
                if config.ttlMillis.map({ now - last < $0 }) ?? true {
                    pass.discards[.duplicate] += 1
                    return false
                }
                return true
            }
            if seen.insert(key, now, limit: config.maxKeys) { forgotten += 1 }
            return true
        }
    }
}
