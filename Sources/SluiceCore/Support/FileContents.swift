#if canImport(Glibc)
    internal import Glibc
#endif

/// Whole small files (a pipeline, a checkpoint file) read with read(2), without Foundation.
package enum FileContents {
    /// Why a file could not be read: the `errno` of the call that failed.
    package struct Failure: Error {
        package let code: Int32

        /// The file does not exist.
        package var isMissing: Bool { code == ENOENT }
        /// The system's words for it, as `strerror` gives them.
        package var message: String { String(cString: strerror(code)) }
    }

    /// The bytes of the file at `path`.
    package static func read(_ path: String) throws(Failure) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(code: errno) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = Glibc.read(descriptor, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            if count < 0 { throw Failure(code: errno) }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }
}
