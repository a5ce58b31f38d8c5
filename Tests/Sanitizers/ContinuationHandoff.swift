// Evidence for ThreadSanitizerHandOff (Sources/SluiceSync): run by `scripts/sanitize thread`.
//
// Bytes are written on a Dispatch queue and handed to a task by resuming a CheckedContinuation: correct Swift
// (the resume happens before the task continues), yet this toolchain's TSan reports a data race between the
// write and the task's read, because the hand-off through the concurrency runtime is not visible to it.
// Sluice's stdin reader and output writer hand data over this way, annotated with ThreadSanitizerHandOff.
import Dispatch

let queue = DispatchQueue(label: "reader")

func read() async -> [UInt8] {
    await withCheckedContinuation { continuation in
        queue.async {
            let bytes = [UInt8](unsafeUninitializedCapacity: 1 << 17) { buffer, count in
                for index in 0..<buffer.count { buffer[index] = UInt8(truncatingIfNeeded: index) }
                count = buffer.count
            }
            continuation.resume(returning: bytes)
        }
    }
}

func sumOfReads() async -> Int {
    var total = 0
    for _ in 0..<200 {
        let bytes = await read()
        total &+= bytes.withUnsafeBufferPointer { $0.reduce(0) { $0 &+ Int($1) } }
    }
    return total
}

let task = Task.detached { await sumOfReads() }
print(await task.value)
