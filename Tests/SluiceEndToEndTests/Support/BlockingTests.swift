import Dispatch
import Foundation
import SluiceSync
import Synchronization
import Testing

/// Runs every test of a suite on a thread of its own, off Swift's cooperative pool, at most as many at once as
/// there are cores.
///
/// End-to-end tests block their thread: they wait for child processes, pipes and peers. Swift Testing calls a test,
/// synchronous or not, on the cooperative pool, whose width is the number of cores (two on this project's
/// machines), so two such tests stalled every async test of the same process (the library's and the runtime's
/// in-process pipelines, which need the pool) until they ended: those tests finished only when the end-to-end suites
/// did, and under ThreadSanitizer one waited past its 300 s bound for a pipeline that had had no thread to run on.
/// Every suite of this target carries this trait.
struct BlockingTests: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    /// Each test case gets its own thread; a suite itself needs none.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? { testCase == nil ? nil : self }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        await BlockingSlots.shared.take()
        defer { BlockingSlots.shared.give() }
        try await withTaskExecutorPreference(OwnThreadExecutor()) { try await function() }
    }
}

extension Trait where Self == BlockingTests {
    /// The suite's tests block their thread: run each on one of its own (``BlockingTests``).
    static var blocking: Self { Self() }
}

/// Runs a test task's jobs on a serial Dispatch queue of its own. Such a queue draws its thread from Dispatch's
/// overcommitting pool, which adds threads while others block, so a test blocking it holds back nothing else.
private final class OwnThreadExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "sluice.test.blocking")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

/// How many blocking tests may run at once: as many as there are cores, as many as the cooperative pool ran
/// before, so that the machine's load, and the timing the tests were written for, stay what they were. Waiting for a
/// slot suspends; it never blocks a thread. Slots are given in the order they were asked for.
private final class BlockingSlots: Sendable {
    static let shared = BlockingSlots(count: max(2, ProcessInfo.processInfo.activeProcessorCount))

    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state: Mutex<State>

    private init(count: Int) { state = Mutex(State(free: count)) }

    func take() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let taken = state.locked { state -> Bool in
                guard state.free > 0 else {
                    state.waiting.append(continuation)
                    return false
                }
                state.free -= 1
                return true
            }
            if taken { continuation.resume() }
        }
    }

    func give() {
        // A waiting test takes the slot over directly, so none can slip in ahead of it.
        let next = state.locked { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
