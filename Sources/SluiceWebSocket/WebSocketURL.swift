/// A `ws://` or `wss://` URL split into what a connection needs.
public struct WebSocketURL: Sendable, Equatable, CustomStringConvertible {
    /// True for `wss://`.
    public let secure: Bool
    /// The host name or address (IPv6 without brackets).
    public let host: String
    /// The port: given, or 80 / 443.
    public let port: Int
    /// The path and query, starting with `/`.
    public let path: String

    /// Parses `text`; `nil` when it is not a ws:// or wss:// URL with a host.
    public init?(_ text: String) {
        let rest: Substring
        if text.hasPrefix("ws://") {
            secure = false
            rest = text.dropFirst(5)
        } else if text.hasPrefix("wss://") {
            secure = true
            rest = text.dropFirst(6)
        } else {
            return nil
        }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var pathPart = String(rest[authorityEnd...])
        if pathPart.isEmpty || pathPart.hasPrefix("?") { pathPart = "/" + pathPart }
        path = pathPart
        var hostPart = authority
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { return nil }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty, !hostPart.contains("@") else { return nil }
        host = String(hostPart)
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else { return nil }
            port = value
        } else {
            port = secure ? 443 : 80
        }
    }

    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(secure ? "wss" : "ws")://\(shownHost):\(port)\(path)"
    }
}
