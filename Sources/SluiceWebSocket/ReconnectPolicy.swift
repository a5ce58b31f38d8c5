/// Exponential backoff with jitter between connection attempts.
public struct ReconnectPolicy: Sendable, Equatable {
    /// The delay before the first retry.
    public var initialDelayMs: Int
    /// The most the delay grows to.
    public var maxDelayMs: Int
    /// Up to this percentage is added at random, so many clients do not retry in step.
    public var jitterPercent: Int
    /// Retries before giving up; 0 retries forever.
    public var maxAttempts: Int

    public init(initialDelayMs: Int = 250, maxDelayMs: Int = 30_000, jitterPercent: Int = 20, maxAttempts: Int = 0) {
        self.initialDelayMs = initialDelayMs
        self.maxDelayMs = maxDelayMs
        self.jitterPercent = jitterPercent
        self.maxAttempts = maxAttempts
    }

    /// The delay before retry number `attempt` (1 for the first), given a random `unit` in [0, 1).
    public func delayMs(attempt: Int, unit: Double) -> Int {
        var base = Double(initialDelayMs)
        for _ in 1..<max(1, min(attempt, 40)) { base *= 2 }
        base = min(base, Double(maxDelayMs))
        return Int(base * (1 + Double(jitterPercent) / 100 * unit))
    }
}
