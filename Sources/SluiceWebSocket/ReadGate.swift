/// The flow-control bookkeeping shared by client and server: messages delivered but not yet acknowledged, and
/// whether reading is paused. Past the high-water mark reading pauses; it resumes at half of it, so a consumer
/// hovering near the mark does not toggle the socket on every batch. Lives inside the owner's Mutex.
struct ReadGate {
    let highWater: Int
    private(set) var inFlight = 0
    /// True while the service thread should not read.
    private(set) var paused = false

    init(highWater: Int) {
        self.highWater = highWater
    }

    /// Counts `count` delivered messages; returns true when reading should be paused.
    mutating func delivered(_ count: Int) -> Bool {
        inFlight += count
        if inFlight > highWater { paused = true }
        return paused
    }

    /// Counts `count` acknowledged messages; returns true when reading may resume now (the service thread must
    /// be woken to do it).
    mutating func acknowledged(_ count: Int) -> Bool {
        inFlight -= count
        guard paused, inFlight <= highWater / 2 else { return false }
        paused = false
        return true
    }
}
