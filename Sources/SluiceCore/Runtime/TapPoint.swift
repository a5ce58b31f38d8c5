internal import SluiceSync
internal import Synchronization

/// Where the events leaving one component can be watched while the pipeline runs (`sluice tap`, the dashboard):
/// a source's and a transform's output (each named output of a `route` by its name), and the events a sink takes
/// to write.
///
/// Watching never slows the pipeline: with no watcher, offering a batch costs one atomic load; with watchers, each
/// takes a sample of at most its rate per second (copied as JSON text under a lock, never waiting for the watcher),
/// and what the watcher does with it happens on its own thread.
public final class TapPoint: Sendable {
    private let watcherCount = Atomic<Int>(0)
    private let watchers = Mutex<[Watcher]>([])
    private let nextID = Atomic<Int>(1)

    /// One watcher: which output it watches, its token bucket and what it still wants.
    private struct Watcher {
        let id: Int
        let output: String?
        let ratePerSec: Double
        var tokens: Double
        var refilledNanos: UInt64
        var remaining: Int
        let deliver: @Sendable (_ events: [[UInt8]], _ finished: Bool) -> Void
    }

    /// A tap point nobody watches yet.
    public init() {}

    /// Starts watching: `deliver` gets the sampled events as JSON text (at most `ratePerSec` a second, evenly
    /// spread over each batch) on the pipeline's thread, and must hand them off at once; after `limit` events it
    /// is called with `finished` true and the watch ends. `output` picks one named output (`nil`: the
    /// component's only output, or all of a route's). Returns the id ``unwatch(_:)`` takes.
    public func watch(
        output: String?, ratePerSec: Double, limit: Int,
        deliver: @escaping @Sendable (_ events: [[UInt8]], _ finished: Bool) -> Void
    ) -> Int {
        let id = nextID.add(1, ordering: .relaxed).oldValue
        watchers.locked { watchers in
            // A full second's worth may go at once, so that a slow pipeline still shows its first events.
            watchers.append(
                Watcher(
                    id: id, output: output, ratePerSec: ratePerSec, tokens: max(1, ratePerSec),
                    refilledNanos: MonotonicClock.nanos(), remaining: limit, deliver: deliver))
            watcherCount.store(watchers.count, ordering: .relaxed)
        }
        return id
    }

    /// Stops the watch `id`: nothing more is sampled for it (a delivery already under way may still arrive).
    public func unwatch(_ id: Int) {
        watchers.locked { watchers in
            watchers.removeAll { $0.id == id }
            watcherCount.store(watchers.count, ordering: .relaxed)
        }
    }

    /// True while anyone watches.
    public var isWatched: Bool { watcherCount.load(ordering: .relaxed) > 0 }

    /// Offers `batch`, leaving through `output`, to the watchers.
    @inline(__always)
    public func offer(_ batch: [Event], output: String? = nil) {
        guard watcherCount.load(ordering: .relaxed) > 0, !batch.isEmpty else { return }
        sample(batch, output: output)
    }

    private func sample(_ batch: [Event], output: String?) {
        let now = MonotonicClock.nanos()
        let deliveries = watchers.locked { watchers -> [(@Sendable ([[UInt8]], Bool) -> Void, [[UInt8]], Bool)] in
            var deliveries: [(@Sendable ([[UInt8]], Bool) -> Void, [[UInt8]], Bool)] = []
            for index in watchers.indices.reversed() {
                var watcher = watchers[index]
                guard watcher.output == nil || watcher.output == output else { continue }
                let elapsed = Double(now &- watcher.refilledNanos) / 1e9
                watcher.tokens = min(max(1, watcher.ratePerSec), watcher.tokens + elapsed * watcher.ratePerSec)
                watcher.refilledNanos = now
                let take = min(Int(watcher.tokens), watcher.remaining, batch.count)
                guard take > 0 else {
                    watchers[index] = watcher
                    continue
                }
                var events: [[UInt8]] = []
                events.reserveCapacity(take)
                // Evenly spread: the first event, then every `batch.count / take`-th.
                for pick in 0..<take {
                    var text: [UInt8] = []
                    batch[pick * batch.count / take].writeJSON(to: &text)
                    events.append(text)
                }
                watcher.tokens -= Double(take)
                watcher.remaining -= take
                let finished = watcher.remaining == 0
                if finished {
                    watchers.remove(at: index)
                } else {
                    watchers[index] = watcher
                }
                deliveries.append((watcher.deliver, events, finished))
            }
            watcherCount.store(watchers.count, ordering: .relaxed)
            return deliveries
        }
        for (deliver, events, finished) in deliveries { deliver(events, finished) }
    }
}
