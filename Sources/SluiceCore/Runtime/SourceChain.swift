internal import SluiceSync
internal import Synchronization

/// Stateless transforms (``TransformConfig/isStateless``: filter, map) fused into the source they follow: they
/// run on each batch in the source's own sending, on the thread that made it, before it goes to any buffer. Their
/// work then costs no hop, and a source that makes its batches on both cores (stdin) has them run on both.
///
/// As they hold nothing between batches, any number of instances may run at once: a source that sends from
/// several threads takes one per send (``run(_:)``), a source that makes batches on several threads may run one on
/// each (``makeRunner()``, then ``EventOutput/send(processed:)``). Each transform keeps its own counters and tap, as
/// in a task of its own.
package final class SourceChain: Sendable {
    /// The source's counters: what it sends is what the first transform receives.
    let source: ComponentMetrics
    let members: [Member]
    /// Instances not in use.
    private let idle = Mutex<[Runner]>([])

    /// One transform of the chain: how to make an instance, and its counters.
    struct Member: Sendable {
        let make: @Sendable () -> any Transform
        let metrics: ComponentMetrics
    }

    init(source: ComponentMetrics, members: [Member]) {
        precondition(!members.isEmpty, "A source chain has at least one transform.")
        self.source = source
        self.members = members
    }

    /// The counters of the last transform, which the source's edge counts as sending.
    var last: ComponentMetrics { members[members.count - 1].metrics }

    /// Runs the chain on `batch` with an instance not in use by another send.
    func run(_ batch: inout [Event]) {
        var runner = idle.locked { $0.popLast() } ?? makeRunner()
        runner.run(&batch)
        idle.locked { $0.append(runner) }
    }

    /// An instance of the chain of its own, for a thread that makes batches.
    package func makeRunner() -> Runner {
        Runner(chain: self, transforms: members.map { $0.make() })
    }

    /// An instance of the chain: its transforms' state (where each found its fields in the last event).
    package struct Runner: Sendable {
        package let chain: SourceChain
        var transforms: [any Transform]

        /// Passes `batch` through every transform, counting each as its task would.
        package mutating func run(_ batch: inout [Event]) {
            guard !batch.isEmpty else { return }
            chain.source.recordSent(batch.count)
            chain.source.tap.offer(batch)
            let now = WallClock.nowMillis()
            for index in transforms.indices {
                let metrics = chain.members[index].metrics
                metrics.recordReceived(batch.count)
                var pass = TransformPass(nowMillis: now)
                transforms[index].process(&batch, &pass)
                metrics.record(pass, state: nil)
                // The last one's sends are counted by the edge, which sends them.
                if index < transforms.count - 1 {
                    metrics.recordSent(batch.count)
                    metrics.tap.offer(batch)
                }
                if batch.isEmpty { return }
            }
        }
    }
}
