/// A replica's base URL as written (`replication.litestream.replica`, `Pull {replica}`,
/// `--replica`): what accountd refuses before Litestream ever sees it, and when two spellings
/// name the same store.
///
/// Litestream (Go's `net/url`) ends a URL's authority at the first `/`, `?` or `#`: a password
/// holding one of them, written as is, is read partly as the host or the path, and Litestream's
/// error then prints that part (`invalid port ":Tr0ub4dor"`) where no masking can know it for a
/// password. Such a URL never worked; it is refused up front, with a message that does not echo it.
public enum ReplicaAddress {
    /// Why `text` cannot be a replica's base URL, in words that never repeat its user name or
    /// password; nil when it can be one.
    ///
    /// Refused: no `scheme://`; whitespace, a control character or a quote anywhere (messages
    /// cut a URL there); a query parameter given twice (Litestream reads the first, a reader
    /// of the URL may take the last: two spellings of one store could seem two stores); a user
    /// name or password (the text before the last `@`, when a `:` comes before any `/`, `?`,
    /// `#` or `@`) holding `/`, `?` or `#` unencoded.
    public static func problem(in text: String) -> String? {
        guard let scheme = schemeSeparator(in: text), scheme.lowerBound > text.startIndex else {
            return "it is not a URL Litestream takes (no scheme://), e.g. file:///srv/replica/accounts or s3://bucket/accounts"
        }
        if text.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F || $0 == "\"" || $0 == "'" }) {
            return "it holds whitespace, a control character or a quote; write them percent-encoded (a space is %20)"
        }
        if let twice = repeatedParameter(in: text) {
            return "its query gives the parameter '\(twice)' more than once; give each parameter once"
        }
        let rest = text[scheme.upperBound...]
        guard let first = rest.firstIndex(where: { ":/?#@".contains($0) }), rest[first] == ":",
            let at = rest.lastIndex(of: "@")
        else { return nil }
        if rest[first..<at].contains(where: { "/?#".contains($0) }) {
            return "its user name or password holds '/', '?' or '#' written as is, which Litestream would read as the end of the host "
                + "(and print part of the password in its errors); write them percent-encoded (%2F, %3F, %23), and an '@' in the path as %40"
        }
        return nil
    }

    /// `text` reduced to the store it names, for telling whether two spellings of a base are
    /// the same store (the handoff fence, `AccountMoved`):
    ///
    /// - the scheme and host lower-cased; every spelling of this machine is one host, and an
    ///   IPv6 literal is written one way (``ReplicaHost``); an SFTP port of 22 is no port;
    /// - the user name and password left out (the same store, reached as another user);
    /// - the path percent-decoded, without empty segments (`//`), `.` segments or a trailing `/`;
    /// - of the query, `endpoint` alone (its own URL reduced the same way): the other
    ///   parameters (`region`, `force-path-style`, `skip-verify`, ...) say how to reach a
    ///   store, not which one.
    ///
    /// So a URL that differs from the base only in such spelling counts as that base.
    public static func storeIdentity(_ text: String) -> String {
        guard let schemeRange = schemeSeparator(in: text) else { return text.lowercased() }
        let scheme = text[..<schemeRange.lowerBound].lowercased()
        var rest = text[schemeRange.upperBound...]
        // The user name and password: up to the last '@' of the authority, which ends at the
        // first '/', '?' or '#' (as Go's parser reads it; ``problem(in:)`` refuses the rest).
        let authorityEnd = rest.firstIndex(where: { "/?#".contains($0) }) ?? rest.endIndex
        if let at = rest[..<authorityEnd].lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        var query = Substring("")
        if let mark = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            query = rest[mark...].dropFirst()
            if let hash = query.firstIndex(of: "#") { query = query[..<hash] }
            rest = rest[..<mark]
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        var host = decode(rest[..<slash]).lowercased()
        host = ReplicaHost.canonical(host)
        if scheme == "sftp", host.hasSuffix(":22") { host.removeLast(3) }
        var segments: [String] = []
        for segment in decode(rest[slash...]).split(separator: "/", omittingEmptySubsequences: true) where segment != "." {
            if segment == ".." { _ = segments.popLast() } else { segments.append(String(segment)) }
        }
        var identity = scheme + "://" + numericPort(host) + "/" + segments.joined(separator: "/")
        // Litestream reads the first `endpoint`; ``problem(in:)`` refuses a second.
        for parameter in query.split(separator: "&") {
            let pair = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            // Exactly `endpoint`, as Litestream (Go's `Query().Get`) reads it: an `Endpoint=` is not one.
            guard decode(pair[0]) == "endpoint", pair.count == 2 else { continue }
            identity += "?endpoint=" + endpointIdentity(decode(pair[1]))
            break
        }
        return identity
    }

    /// An S3 `endpoint` reduced to the host and port it reaches: with or without a scheme
    /// (`127.0.0.1:9000`, `http://...`, `https://...`), the same server.
    static func endpointIdentity(_ endpoint: String) -> String {
        let reduced = storeIdentity(endpoint.contains("://") ? endpoint : "http://" + endpoint)
        return schemeSeparator(in: reduced).map { String(reduced[$0.upperBound...]) } ?? reduced
    }

    /// `host` with a numeric port written without leading zeros (`:041333` is `:41333`).
    static func numericPort(_ host: String) -> String {
        guard let colon = host.lastIndex(of: ":"), !host[colon...].contains("]") else { return host }
        let port = host[host.index(after: colon)...]
        guard !port.isEmpty, port.allSatisfy(\.isASCII), let number = Int(port) else { return host }
        return host[..<colon] + ":" + String(number)
    }

    /// The first query parameter named more than once in `text` (names compared ignoring case).
    static func repeatedParameter(in text: String) -> String? {
        guard let mark = text.firstIndex(of: "?") else { return nil }
        var query = text[text.index(after: mark)...]
        if let hash = query.firstIndex(of: "#") { query = query[..<hash] }
        var seen: Set<String> = []
        for parameter in query.split(separator: "&") {
            let name = decode(parameter.prefix { $0 != "=" }).lowercased()
            if !seen.insert(name).inserted { return name }
        }
        return nil
    }

    /// Whether `one` and `other` name the same store (``storeIdentity(_:)``).
    public static func sameStore(_ one: String, _ other: String) -> Bool {
        storeIdentity(one) == storeIdentity(other)
    }

    /// `text` with its `%XX` escapes decoded; an escape that is not one is kept as written.
    static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%"), iterator.count >= 2,
                let value = UInt8(String(decoding: iterator.prefix(2), as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                iterator = iterator.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Where the first `://` of `text` lies; nil without one. (No Foundation here.)
    static func schemeSeparator(in text: String) -> Range<String.Index>? {
        var index = text.startIndex
        while index < text.endIndex {
            if text[index...].hasPrefix("://") { return index..<text.index(index, offsetBy: 3) }
            index = text.index(after: index)
        }
        return nil
    }
}
