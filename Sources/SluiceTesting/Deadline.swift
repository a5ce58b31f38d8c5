internal import SluiceSync
internal import Synchronization

/// The value of `task` if it finishes within `seconds`, else `nil` (the task is then left running: a test that
/// gets `nil` has found a task that does not end, and says so instead of hanging the run).
public func value<Value: Sendable>(of task: Task<Value, Never>, within seconds: Double) async -> Value? {
    let waiter = FirstAnswer<Value?>()
    return await withCheckedContinuation { continuation in
        waiter.wait(continuation)
        Task { waiter.answer(await task.value) }
        Task {
            try? await Task.sleep(for: .seconds(seconds))
            waiter.answer(nil)
        }
    }
}

/// Resumes one waiting continuation with the first answer given; later answers are ignored.
private final class FirstAnswer<Answer: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<Answer, Never>?>(nil)

    func wait(_ waiting: CheckedContinuation<Answer, Never>) {
        continuation.locked { $0 = waiting }
    }

    func answer(_ answer: Answer) {
        let waiting = continuation.locked { continuation -> CheckedContinuation<Answer, Never>? in
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: answer)
    }
}
