import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A `websocket_server` binds exactly what `listen` says, checked from outside: the listening sockets as `ss` shows
/// them, connections to addresses that must be refused (127.0.0.2, which every Linux routes to loopback, the
/// machine's own non-loopback addresses, the other family's loopback) and to those that must be accepted, and the
/// address on stderr, which must be the socket's.
@Suite(.serialized, .blocking)
struct WebSocketServerBindingEndToEndTests {
    /// The machine's addresses that are not loopback, by family (IPv6 without link-local ones).
    static let externalAddresses: (v4: [String], v6: [String]) = {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return ([], []) }
        defer { freeifaddrs(list) }
        var v4: [String] = []
        var v6: [String] = []
        var entry = list
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            guard let address = current.pointee.ifa_addr else { continue }
            var buffer = [CChar](repeating: 0, count: 64)
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                var v4Address = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                inet_ntop(AF_INET, &v4Address, &buffer, 64)
                let text = Self.text(buffer)
                if !text.hasPrefix("127.") { v4.append(text) }
            case AF_INET6:
                var v6Address = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                inet_ntop(AF_INET6, &v6Address, &buffer, 64)
                let text = Self.text(buffer)
                if text != "::1", !text.lowercased().hasPrefix("fe8") { v6.append(text) }
            default:
                break
            }
        }
        return (v4, v6)
    }()

    /// True when this machine has ::1 (some containers run without IPv6).
    static let hasIPv6Loopback = connectable("::1", port: 9, expectRefusal: true)

    /// Tries a TCP connection; true when it was accepted. With `expectRefusal`, "refused" also counts as proof that
    /// the address exists (used to probe for ::1).
    static func connectable(_ host: String, port: Int, expectRefusal: Bool = false) -> Bool {
        let isV6 = host.contains(":")
        let socketDescriptor = socket(isV6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketDescriptor >= 0 else { return false }
        defer { close(socketDescriptor) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(socketDescriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result: Int32
        if isV6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET6, host, &address.sin6_addr)
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET, host, &address.sin_addr)
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        if expectRefusal { return result == 0 || errno == ECONNREFUSED }
        return result == 0
    }

    /// The local addresses of the TCP sockets process `pid` listens on, as `ss -ltnp` prints them.
    static func listeningAddresses(pid: Int32) throws -> Set<String> {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ss")
        process.arguments = ["-ltnpH"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return Set(
            text.split(separator: "\n").filter { $0.contains("pid=\(pid),") }.compactMap { line in
                // State Recv-Q Send-Q Local Peer Process
                let columns = line.split(separator: " ", omittingEmptySubsequences: true)
                return columns.count > 3 ? String(columns[3]) : nil
            })
    }

    /// Runs a sink listening on `listen` (port left to the kernel where it ends in :0) and checks it from outside.
    func check(
        listen: String, expectedHosts: [String], accepts: [String], refuses: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              fleet: {type: simulator, rate: 5, seed: 1}
            sinks:
              live: {type: websocket_server, inputs: [fleet], listen: '\(listen)'}
            metrics: {interval_secs: 0, to: "$METRICS", format: json}
            """)
        defer { pipeline.remove() }
        let child = SluiceProcess(["run", pipeline.path])
        try child.start()
        child.feed { _ in nil }
        defer {
            kill(child.process.processIdentifier, SIGTERM)
            _ = child.readAllOutput()
            #expect(child.waitForExit() == 0, "\(child.errorText)", sourceLocation: sourceLocation)
        }
        #expect(child.waitForErrorText("listening on "), sourceLocation: sourceLocation)
        let announced = try #require(
            child.errorText.components(separatedBy: "listening on ").last?.split(separator: "\n").first,
            sourceLocation: sourceLocation)
        let urls = announced.components(separatedBy: ", ")
        let bound = urls.map { $0.replacingOccurrences(of: "ws://", with: "").replacingOccurrences(of: "/", with: "") }
        let port = try #require(
            bound.first.flatMap { Int($0.split(separator: ":").last ?? "") }, sourceLocation: sourceLocation)
        let expected = Set(expectedHosts.map { $0.contains(":") ? "[\($0)]:\(port)" : "\($0):\(port)" })
        #expect(Set(bound) == expected, "stderr names the sockets' addresses", sourceLocation: sourceLocation)
        #expect(
            try Self.listeningAddresses(pid: child.process.processIdentifier) == expected, "ss shows exactly these",
            sourceLocation: sourceLocation)
        for host in accepts {
            #expect(Self.connectable(host, port: port), "\(host) is accepted", sourceLocation: sourceLocation)
        }
        for host in refuses {
            #expect(!Self.connectable(host, port: port), "\(host) is refused", sourceLocation: sourceLocation)
        }
    }

    @Test func aBarePortBindsIPv4LoopbackOnly() throws {
        try check(
            listen: "0", expectedHosts: ["127.0.0.1"], accepts: ["127.0.0.1"],
            refuses: ["127.0.0.2"] + Self.externalAddresses.v4 + Self.externalAddresses.v6
                + (Self.hasIPv6Loopback ? ["::1"] : []))
    }

    @Test func anIPv4AddressBindsThatAddressOnly() throws {
        try check(
            listen: "127.0.0.1:0", expectedHosts: ["127.0.0.1"], accepts: ["127.0.0.1"],
            refuses: ["127.0.0.2"] + Self.externalAddresses.v4 + Self.externalAddresses.v6)
    }

    @Test(.enabled(if: hasIPv6Loopback, "this machine has no ::1"))
    func anIPv6AddressBindsThatAddressOnly() throws {
        try check(
            listen: "[::1]:0", expectedHosts: ["::1"], accepts: ["::1"],
            refuses: ["127.0.0.1", "127.0.0.2"] + Self.externalAddresses.v4 + Self.externalAddresses.v6)
    }

    @Test func everyIPv4InterfaceButNotIPv6() throws {
        try check(
            listen: "0.0.0.0:0", expectedHosts: ["0.0.0.0"],
            accepts: ["127.0.0.1", "127.0.0.2"] + Self.externalAddresses.v4,
            refuses: Self.externalAddresses.v6 + (Self.hasIPv6Loopback ? ["::1"] : []))
    }

    @Test(.enabled(if: hasIPv6Loopback, "this machine has no ::1"))
    func everyIPv6InterfaceButNotIPv4() throws {
        try check(
            listen: "[::]:0", expectedHosts: ["::"], accepts: ["::1"] + Self.externalAddresses.v6,
            refuses: ["127.0.0.1"] + Self.externalAddresses.v4)
    }

    @Test func anInterfaceNameBindsItsAddresses() throws {
        try check(
            listen: "lo:0", expectedHosts: ["127.0.0.1"] + (Self.hasIPv6Loopback ? ["::1"] : []),
            accepts: ["127.0.0.1"], refuses: ["127.0.0.2"] + Self.externalAddresses.v4)
    }

    @Test func aHostNameBindsWhatItResolvesTo() throws {
        // localhost resolves to loopback addresses only, whichever this machine's /etc/hosts lists.
        let pipelineHosts = try #require(Self.resolve("localhost"))
        try check(
            listen: "localhost:0", expectedHosts: pipelineHosts, accepts: pipelineHosts,
            refuses: ["127.0.0.2"] + Self.externalAddresses.v4 + Self.externalAddresses.v6)
    }

    @Test func unknownNamesAndBadAddressesAreErrors() throws {
        let pipeline = try TemporaryPipeline(
            """
            sources:
              fleet: {type: simulator, rate: 5}
            sinks:
              live: {type: websocket_server, inputs: [fleet], listen: 'no-such-host.invalid:0'}
            """)
        defer { pipeline.remove() }
        let result = try SluiceProcess.run(["run", pipeline.path])
        #expect(result.status == 1)
        #expect(
            result.errors.contains(
                "cannot listen on 'no-such-host.invalid': it is not an IP address, an interface or a host name that resolves"
            ))
        for bad in ["::1:8080", "[::1:8080", "host name:80", "host:99999"] {
            let invalid = try TemporaryPipeline(
                "sources:\n  s: {type: simulator}\nsinks:\n  w: {type: websocket_server, inputs: [s], listen: '\(bad)'}\n"
            )
            defer { invalid.remove() }
            let validation = try SluiceProcess.run(["validate", invalid.path])
            #expect(validation.status == 78, "\(bad)")
            #expect(validation.errors.contains("'\(bad)' is not a listen address"), "\(bad)")
        }
    }

    /// The text of a NUL-terminated buffer.
    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The distinct addresses getaddrinfo gives for `name`, IPv4 first.
    static func resolve(_ name: String) -> [String]? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &list) == 0 else { return nil }
        defer { freeaddrinfo(list) }
        var v4: [String] = []
        var v6: [String] = []
        var entry = list
        while let current = entry {
            defer { entry = current.pointee.ai_next }
            guard let address = current.pointee.ai_addr else { continue }
            var buffer = [CChar](repeating: 0, count: 64)
            if Int32(address.pointee.sa_family) == AF_INET {
                var raw = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                inet_ntop(AF_INET, &raw, &buffer, 64)
                if !v4.contains(Self.text(buffer)) { v4.append(Self.text(buffer)) }
            } else if Int32(address.pointee.sa_family) == AF_INET6 {
                var raw = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                inet_ntop(AF_INET6, &raw, &buffer, 64)
                if !v6.contains(Self.text(buffer)) { v6.append(Self.text(buffer)) }
            }
        }
        return v4 + v6
    }
}
