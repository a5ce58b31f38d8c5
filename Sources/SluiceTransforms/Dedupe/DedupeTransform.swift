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
    /// Scratch: the batch's keys (`nil` where reading one failed), and what warming the table read.
    var batchKeys: [KeyFingerprint?] = []
    var warmed: UInt64 = 0

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
        // Every key of the batch first, so that the table's slots for them can be fetched together.
        batchKeys.removeAll(keepingCapacity: true)
        events.forEachInPlace { event in
            do throws(EvaluationError) {
                batchKeys.append(try keys.read(event))
            } catch {
                batchKeys.append(nil)
                pass.discards[.error] += 1
                errors.report(error, in: "dedupe fields")
            }
        }
        if seen.isLarge {
            warmed ^= seen.warm(batchKeys, forgetting: max(0, seen.count + events.count - config.maxKeys))
        }
        var position = 0
        events.retainEvents { _ in
            defer { position += 1 }
            guard let key = batchKeys[position] else { return false }
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
