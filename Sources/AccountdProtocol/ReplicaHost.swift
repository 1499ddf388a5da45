#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The host of a replica's URL reduced to the machine it reaches, for ``ReplicaAddress/storeIdentity(_:)``:
/// every spelling of this machine is `127.0.0.1` (`localhost`, any `127.x.x.x`, `0.0.0.0`,
/// `[::]`, `[::1]`, an IPv4-mapped `[::ffff:127.0.0.1]` or `[::ffff:7f00:1]`, this machine's
/// own host name), an IPv6 literal is written one way, and an IPv4-mapped one as its IPv4
/// address. Other names are compared as written (lower-cased,
/// without a trailing dot): no name is looked up (hostile33e #3).
enum ReplicaHost {
    static let local = "127.0.0.1"

    /// `authority` (`host`, `host:port`, `[v6]`, `[v6]:port`), reduced.
    static func canonical(_ authority: String) -> String {
        var host = Substring(authority)
        var port = Substring("")
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return authority }
            port = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            port = host[colon...]
            host = host[..<colon]
        }
        // The port is left as written: ``ReplicaAddress/numericPort(_:)`` reduces it after.
        return name(String(host)) + port
    }

    /// A host without its port, reduced.
    static func name(_ host: String) -> String {
        if let v4 = ipv4(host) { return isLocal(v4) ? local : v4.map(String.init).joined(separator: ".") }
        if let v6 = ipv6(host) {
            if v6.allSatisfy({ $0 == 0 }) || v6 == [0, 0, 0, 0, 0, 0, 0, 1] { return local }
            if v6[0..<5].allSatisfy({ $0 == 0 }) && v6[5] == 0xFFFF {
                let v4 = [UInt8(v6[6] >> 8), UInt8(v6[6] & 0xFF), UInt8(v6[7] >> 8), UInt8(v6[7] & 0xFF)]
                return isLocal(v4) ? local : v4.map(String.init).joined(separator: ".")
            }
            return "[" + v6.map { String($0, radix: 16) }.joined(separator: ":") + "]"
        }
        var lowered = host.lowercased()
        if lowered.hasSuffix(".") { lowered.removeLast() }
        if lowered == "localhost" || lowered.hasSuffix(".localhost") || lowered == "localhost.localdomain" { return local }
        if let own = machineName(), lowered == own || lowered == own.prefix { $0 != "." } { return local }
        return lowered
    }

    private static func isLocal(_ v4: [UInt8]) -> Bool { v4[0] == 127 || v4.allSatisfy { $0 == 0 } }

    /// A dotted-decimal IPv4 address (four numbers 0 to 255, as Go's parser takes them); nil otherwise.
    static func ipv4(_ text: some StringProtocol) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy({ $0.isASCII && $0.isNumber }), let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    /// An IPv6 address as its eight groups (`::` expanded, a trailing dotted IPv4 read); nil otherwise.
    static func ipv6(_ text: String) -> [UInt16]? {
        guard text.contains(":") else { return nil }
        var address = Substring(text)
        if let zone = address.firstIndex(of: "%") { address = address[..<zone] }
        func groups(_ part: Substring) -> [UInt16]? {
            if part.isEmpty { return [] }
            var result: [UInt16] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if index == pieces.count - 1, piece.contains("."), let v4 = ipv4(piece) {
                    result += [UInt16(v4[0]) << 8 | UInt16(v4[1]), UInt16(v4[2]) << 8 | UInt16(v4[3])]
                } else {
                    guard !piece.isEmpty, piece.count <= 4, let value = UInt16(piece, radix: 16) else { return nil }
                    result.append(value)
                }
            }
            return result
        }
        // Where `::` stands, if it does (once at most).
        let characters = Array(address)
        var gap: Int?
        for index in characters.indices.dropLast() where characters[index] == ":" && characters[index + 1] == ":" {
            guard gap == nil else { return nil }
            gap = index
        }
        guard let gap else {
            guard let all = groups(address), all.count == 8 else { return nil }
            return all
        }
        let head = Substring(String(characters[..<gap]))
        let tail = Substring(String(characters[(gap + 2)...]))
        guard !tail.hasPrefix(":"), let first = groups(head), let last = groups(tail), first.count + last.count < 8 else { return nil }
        return first + Array(repeating: 0, count: 8 - first.count - last.count) + last
    }

    /// This machine's host name, lower-cased; nil when it cannot be read.
    static func machineName() -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return nil }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).lowercased()
        return name.isEmpty ? nil : name
    }
}
