#if canImport(Glibc)
    internal import Glibc
#endif

/// A dedicated thread for a C library that blocks while it serves (libwebsockets, librdkafka), kept off Swift's
/// cooperative pool.
public enum ServiceThread {
    /// Starts a detached thread running `body` (pthread, so no Foundation is needed), with a stack of
    /// `stackBytes` when given; throws with the system's reason when the thread cannot be created.
    public static func start(stackBytes: Int? = nil, _ body: @escaping @Sendable () -> Void) throws(ServiceThreadError)
    {
        final class Box: @unchecked Sendable {
            // @unchecked: written once before the thread starts, read once by it.
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        if let stackBytes, pthread_attr_setstacksize(&attributes, stackBytes) != 0 {
            throw ServiceThreadError(message: "cannot start a service thread: invalid stack size \(stackBytes)")
        }
        let box = Unmanaged.passRetained(Box(body))
        var thread = pthread_t()
        let status = pthread_create(
            &thread, &attributes,
            { argument in
                let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
                box.body()
                return nil
            }, box.toOpaque())
        guard status == 0 else {
            // The thread never ran, so it never took the box: release it here.
            box.release()
            throw ServiceThreadError(message: "cannot start a service thread: \(String(cString: strerror(status)))")
        }
    }
}

/// A service thread could not be created (out of memory or threads).
public struct ServiceThreadError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
