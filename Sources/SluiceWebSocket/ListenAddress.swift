internal import SluiceSync
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// One numeric address a server binds, resolved from what `listen` says.
///
/// libwebsockets 4.1 does not bind what it is given: with IPv6 compiled in (Debian's build), it opens an IPv6
/// socket and writes an IPv4 address given as `iface` into the wrong bytes of the IPv6 address, which stays `::`,
/// so `127.0.0.1` listened on every interface of both families. So Sluice resolves `listen` itself into numeric
/// addresses, and binds each on a vhost of its own whose options make lws use exactly that family: IPv6 turned off
/// for an IPv4 address, `IPV6_V6ONLY` set for an IPv6 one.
struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// True for IPv6.
    let isIPv6: Bool
    /// The address in numeric form, as lws takes it (`127.0.0.1`, `::1`).
    let numeric: String

    /// `127.0.0.1:8765` or `[::1]:8765`.
    func withPort(_ port: Int) -> String { isIPv6 ? "[\(numeric)]:\(port)" : "\(numeric):\(port)" }

    var description: String { numeric }

    /// The addresses `host` stands for: an IPv4 or IPv6 address (brackets allowed), `*` (every interface, both
    /// families), the name of a network interface (its IPv4 and non-link-local IPv6 addresses), or a host name
    /// (every address it resolves to).
    static func resolve(_ host: String) -> Result<[ListenAddress], ServerError> {
        var name = host
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name == "*" {
            return .success([ListenAddress(isIPv6: false, numeric: "0.0.0.0"), .init(isIPv6: true, numeric: "::")])
        }
        if let address = numeric(name) { return .success([address]) }
        let interface = interfaceAddresses(name)
        if !interface.isEmpty { return .success(interface) }
        let resolved = hostAddresses(name)
        if !resolved.isEmpty { return .success(resolved) }
        return .failure(
            ServerError(
                message:
                    "cannot listen on '\(host)': it is not an IP address, an interface or a host name that resolves"))
    }

    /// `text` as an IPv4 or IPv6 address in canonical form, or nil.
    static func numeric(_ text: String) -> ListenAddress? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return ListenAddress(family: AF_INET, &v4) }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return ListenAddress(family: AF_INET6, &v6) }
        return nil
    }

    /// Formats the address at `bytes` (an `in_addr` or `in6_addr`) of `family`.
    private init?(family: Int32, _ bytes: UnsafeRawPointer) {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(family, bytes, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        self.init(isIPv6: family == AF_INET6, numeric: text)
    }

    private init(isIPv6: Bool, numeric: String) {
        self.isIPv6 = isIPv6
        self.numeric = numeric
    }

    /// The address of a socket address, or nil for other families.
    init?(_ socketAddress: UnsafePointer<sockaddr>) {
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            var v4 = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            self.init(family: AF_INET, &v4)
        case AF_INET6:
            var v6 = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            self.init(family: AF_INET6, &v6)
        default:
            return nil
        }
    }

    private static func interfaceAddresses(_ name: String) -> [ListenAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var addresses: [ListenAddress] = []
        var entry = list
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            guard let address = current.pointee.ifa_addr, String(cString: current.pointee.ifa_name) == name,
                let listen = ListenAddress(address), !listen.isLinkLocal, !addresses.contains(listen)
            else { continue }
            addresses.append(listen)
        }
        // IPv4 first, as `ss` and people list them.
        return addresses.filter { !$0.isIPv6 } + addresses.filter(\.isIPv6)
    }

    private static func hostAddresses(_ name: String) -> [ListenAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var addresses: [ListenAddress] = []
        var entry = list
        while let current = entry {
            defer { entry = current.pointee.ai_next }
            guard let address = current.pointee.ai_addr, let listen = ListenAddress(address),
                !addresses.contains(listen)
            else { continue }
            addresses.append(listen)
        }
        return addresses.filter { !$0.isIPv6 } + addresses.filter(\.isIPv6)
    }

    /// fe80::/10, which cannot be bound without naming its interface.
    private var isLinkLocal: Bool { isIPv6 && numeric.lowercased().hasPrefix("fe8") }
}

/// The listening TCP sockets of this process, read from outside lws: which sockets a server actually bound is a
/// fact of the kernel's, not of the options it was given.
enum ListeningSockets {
    /// Taken while a server creates its listening sockets, so that the sockets new between two snapshots are its own.
    static let creation = Mutex(())

    /// The socket inodes of the open descriptors now, by inode.
    static func snapshot() -> [UInt64: Int32] {
        var sockets: [UInt64: Int32] = [:]
        guard let directory = opendir("/proc/self/fd") else { return sockets }
        defer { closedir(directory) }
        var target = [CChar](repeating: 0, count: 64)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
            }
            guard let descriptor = Int32(name) else { continue }
            let count = readlink("/proc/self/fd/\(name)", &target, target.count - 1)
            guard count > 0 else { continue }
            let link = String(decoding: target[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // "socket:[12345]"
            guard link.hasPrefix("socket:["), let inode = UInt64(link.dropFirst(8).dropLast()) else { continue }
            sockets[inode] = descriptor
        }
        return sockets
    }

    /// The address and port `descriptor` listens on, or nil when it is not a listening TCP socket.
    static func listeningAddress(_ descriptor: Int32) -> (ListenAddress, Int)? {
        var accepting: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &size) == 0, accepting == 1 else {
            return nil
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> (ListenAddress, Int)? in
                guard getsockname(descriptor, address, &length) == 0, let listen = ListenAddress(address) else {
                    return nil
                }
                let port: UInt16 =
                    listen.isIPv6
                    ? address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port }
                    : address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port }
                return (listen, Int(UInt16(bigEndian: port)))
            }
        }
    }
}
