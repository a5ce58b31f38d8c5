package import Dispatch
internal import SluiceSync

extension DispatchQueue {
    /// Runs `work` on this queue and returns its result, the caller suspended meanwhile: work that may block (a
    /// named pipe's open, a write to a slow reader, a sync to a busy disk) holds a thread of this queue, never one
    /// of Swift's cooperative pool (there are as many as cores).
    package func result<Value: Sendable>(of work: @escaping @Sendable () -> Value) async -> Value {
        let value = await withCheckedContinuation { continuation in
            self.async {
                let value = work()
                ThreadSanitizerHandOff.send()
                continuation.resume(returning: value)
            }
        }
        ThreadSanitizerHandOff.receive()
        return value
    }
}
