extension ConfigNode {
    /// A `listen` value: `HOST:PORT`, `[IPV6]:PORT`, `*:PORT` (every interface) or a bare `PORT`, which binds
    /// 127.0.0.1 only; records an error and returns `nil` for anything else.
    public func listenAddress() -> (host: String, port: Int)? {
        guard let text = string() else { return nil }
        if let parsed = Self.parseListenAddress(text) { return parsed }
        log.error(
            "\(shown(text)) is not a listen address", at: mark,
            notes: [
                "write HOST:PORT ([IPV6]:PORT for an IPv6 address, *:PORT for every interface), or a bare "
                    + "PORT to bind 127.0.0.1 only"
            ])
        return nil
    }

    /// Parses a `listen` value. An IPv6 address needs its brackets, so that its last group is never taken for the
    /// port.
    static func parseListenAddress(_ text: String) -> (host: String, port: Int)? {
        if let port = Int(text), (0...65535).contains(port) { return ("127.0.0.1", port) }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.contains(":") else { return nil }
            host = String(host.dropFirst().dropLast())
        } else if host.contains(":") {
            return nil
        }
        let allowed = host.unicodeScalars.allSatisfy {
            $0.isASCII
                && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || ".-_:%*".unicodeScalars.contains($0))
        }
        return host.isEmpty || !allowed ? nil : (host, port)
    }
}
