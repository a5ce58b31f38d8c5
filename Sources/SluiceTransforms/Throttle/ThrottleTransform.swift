internal import SluiceCore

/// Lets the first `max_events` events of each key through in each window of `window_secs` (aligned to the Unix
/// epoch, on the wall clock), and discards the rest under `throttled`. A window's budget resets when the next one
/// begins; that needs no timer, as nothing is emitted then.
struct ThrottleTransform: Transform {
    let config: ThrottleTransformConfig
    var errors: EvaluationErrorLog
    var keys: KeyReader
    /// Each key's window (its index since the epoch) and the events let through in it.
    var budgets = RecentKeys<(window: Int64, used: Int)>()
    var forgotten = 0

    init(config: ThrottleTransformConfig, errors: EvaluationErrorLog) {
        self.config = config
        self.errors = errors
        keys = KeyReader(config.key.map { [$0] } ?? [])
    }

    var state: TransformState? { TransformState(name: "state_keys", size: budgets.count, evictedTotal: forgotten) }

    mutating func process(_ events: inout [Event], _ pass: inout TransformPass) {
        let window = pass.nowMillis / config.windowMillis
        events.retainEvents { event in
            let key: KeyFingerprint
            do throws(EvaluationError) {
                key = try keys.read(event)
            } catch {
                pass.discards[.error] += 1
                errors.report(error, in: "throttle key")
                return false
            }
            guard let budget = budgets.use(key) else {
                if budgets.insert(key, (window, 1), limit: config.maxKeys) { forgotten += 1 }
                return true
            }
            let used = budget.window == window ? budget.used : 0
            guard used < config.maxEvents else {
                pass.discards[.throttled] += 1
                return false
            }
            budgets.setNewest((window, used + 1))
            return true
        }
    }
}
