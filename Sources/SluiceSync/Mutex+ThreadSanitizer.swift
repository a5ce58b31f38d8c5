public import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

// This toolchain's `Mutex` locks with futexes that ThreadSanitizer cannot see, so under `--sanitize=thread` every
// access inside `withLock` from two threads is reported as a race (Tests/Sanitizers/MutexAccess.swift shows it
// without any Sluice code). `locked` is `withLock` plus TSan's acquire/release annotations, which make the lock's
// ordering visible. In a normal build the TSan runtime is absent: the lookups
// below find nothing and `locked` costs one well-predicted branch more than `withLock`.

/// `__tsan_acquire` / `__tsan_release`, when the process carries ThreadSanitizer's runtime.
@usableFromInline
let threadSanitizerAcquire = threadSanitizerFunction("__tsan_acquire")
@usableFromInline
let threadSanitizerRelease = threadSanitizerFunction("__tsan_release")

/// The address the annotations synchronize on: one for all mutexes. (The guarded value's address cannot be taken
/// before the closure's first access to it, and a Mutex's own cannot be taken at all.) To TSan this makes all
/// critical sections one lock, which could hide a race between sections of different locks, never invent one.
@usableFromInline
nonisolated(unsafe) let threadSanitizerLockToken = UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8)

private func threadSanitizerFunction(_ name: String) -> (@convention(c) (UnsafeMutableRawPointer?) -> Void)? {
    // A null handle is RTLD_DEFAULT: the executable and every library it loaded.
    guard let symbol = dlsym(nil, name) else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutableRawPointer?) -> Void).self)
}

extension Mutex where Value: ~Copyable {
    /// `withLock`, with the lock made visible to ThreadSanitizer. Use it instead of `withLock` everywhere.
    @inlinable
    public borrowing func locked<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        try withLock { (value) throws(Failure) -> sending Result in
            guard let acquire = threadSanitizerAcquire, let release = threadSanitizerRelease else {
                return try body(&value)
            }
            acquire(threadSanitizerLockToken)
            defer { release(threadSanitizerLockToken) }
            return try body(&value)
        }
    }
}

/// A hand-off ThreadSanitizer cannot see: data made on a Dispatch queue and passed to a task by resuming a
/// CheckedContinuation (Tests/Sanitizers/ContinuationHandoff.swift shows the false report without Sluice code).
public enum ThreadSanitizerHandOff {
    /// Call on the sending side, after the data is made and just before resuming.
    @inlinable
    public static func send() { threadSanitizerRelease?(threadSanitizerLockToken) }

    /// Call on the receiving side, just after the await returns and before touching the data.
    @inlinable
    public static func receive() { threadSanitizerAcquire?(threadSanitizerLockToken) }
}

/// A value behind a mutex that escaping closures can share (a `Mutex` stored in a class cannot be captured
/// on its own).
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: Value) {
        mutex = Mutex(value)
    }

    /// ``Mutex/locked(_:)`` on the value.
    public func locked<Result>(_ body: (inout sending Value) -> sending Result) -> sending Result {
        mutex.locked(body)
    }
}
