internal import SluiceCore

/// Keeps the first of every `rate` events (so a run repeats exactly), or, with a key, the events whose key hashes
/// to a multiple of `rate` (with a hash that is the same in every run, so a device is kept or dropped whole, and the
/// same devices every time). The rest are discarded under `sampled`.
struct SampleTransform: Transform {
    let config: SampleTransformConfig
    var errors: EvaluationErrorLog
    var keys: KeyReader
    var counter = 0

    init(config: SampleTransformConfig, errors: EvaluationErrorLog) {
        self.config = config
        self.errors = errors
        keys = KeyReader(config.key.map { [$0] } ?? [])
    }

    mutating func process(_ events: inout [Event], _ pass: inout TransformPass) {
        let rate = UInt64(config.rate)
        events.retainEvents { event in
            let keep: Bool
            if config.key != nil {
                do throws(EvaluationError) {
                    keep = try keys.read(event).hash % rate == 0
                } catch {
                    pass.discards[.error] += 1
                    errors.report(error, in: "sample key")
                    return false
                }
            } else {
                keep = counter % config.rate == 0
                counter += 1
            }
            if !keep { pass.discards[.sampled] += 1 }
            return keep
        }
    }
}
