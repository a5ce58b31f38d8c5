// Evidence for fan-outs giving each consumer texts of its own (`Event.copy(into:)` in
// Sources/SluiceCore/Event/Event.swift): run by `scripts/sanitize thread`.
//
// Two copies of an array share one buffer. Another thread reads its copy and lets go of it; the main thread then
// appends to its own copy, which Swift writes in place as the buffer is no longer shared. Correct Swift (copies of an
// array may be changed on any thread), yet this toolchain's ThreadSanitizer reports a data race between the read and
// the append: what orders them is the reference count, which the Swift runtime changes where TSan cannot see.
// Reported only when the array's code is optimized into the program (`-O`), as in Sluice's builds.
import Glibc
import Synchronization

final class Shared: @unchecked Sendable {  // `copy` is set before the thread starts and used only by it
    var copy: [UInt8]?
}

let done = Atomic<Bool>(false)
var mine = [UInt8](repeating: 1, count: 100)
mine.reserveCapacity(200)
let shared = Shared()
shared.copy = mine
var thread = pthread_t()
pthread_create(
    &thread, nil,
    { _ in
        var sum = 0
        shared.copy!.withUnsafeBufferPointer { for byte in $0 { sum &+= Int(byte) } }
        shared.copy = nil
        // Relaxed: the flag orders nothing, so that only the reference count orders the read before the append.
        done.store(true, ordering: .relaxed)
        return nil
    }, nil)
var spins = 0
while !done.load(ordering: .relaxed), spins < 1_000_000_000 { spins += 1 }  // bounded; the thread takes microseconds
let before = mine.withUnsafeBufferPointer { $0.baseAddress }
mine.append(7)
print("written in place:", before == mine.withUnsafeBufferPointer { $0.baseAddress })
pthread_join(thread, nil)
