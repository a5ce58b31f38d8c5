import SluiceSync
import Testing

struct ServiceThreadTests {
    /// A thread that cannot be created is an error with the system's reason, never a `start()` that waits for a
    /// thread that does not exist. (A stack larger than the address space makes pthread_create fail.)
    @Test func aThreadThatCannotBeCreatedIsAnError() {
        #expect(throws: ServiceThreadError.self) {
            try ServiceThread.start(stackBytes: 1 << 50) {}
        }
    }

    @Test func aThreadThatCanBeCreatedRuns() async throws {
        await confirmation { ran in
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                do {
                    try ServiceThread.start(stackBytes: 1 << 20) {
                        ran()
                        done.resume()
                    }
                } catch {
                    Issue.record("\(error)")
                    done.resume()
                }
            }
        }
    }
}
