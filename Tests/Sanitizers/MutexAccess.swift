// Evidence for `Mutex.locked` (Sources/SluiceSync): run by `scripts/sanitize thread`.
//
// Two threads append to one array, every access inside the same Mutex's withLock: correct Swift, yet this
// toolchain's ThreadSanitizer reports a "Swift access race", because Mutex locks with futexes it cannot see.
// Sluice locks with `locked` instead, which adds TSan's acquire/release annotations.
import Dispatch
import Synchronization

final class Box: Sendable {
    let values = Mutex<[Int]>([])
}

let box = Box()
DispatchQueue.concurrentPerform(iterations: 2) { worker in
    for index in 0..<100_000 { box.values.withLock { $0.append(worker * 1_000_000 + index) } }
}
print(box.values.withLock { $0.count })
