import Foundation

/// Takes secrets out of text before it leaves the process: replies, log lines, error
/// messages. The one place that decides what a secret looks like.
///
/// A URL's password (`sftp://backup:S3cret@host/accountd`) becomes `***`
/// (`sftp://backup:***@host/accountd`); the user name, host and path stay, so the text still
/// says where. Settings that are secrets as a whole are never printed at all.
public enum SecretRedaction {
    /// What a secret is replaced with.
    public static let mask = "***"

    /// `text` with the password of every URL in it (`scheme://user:password@host`) masked.
    ///
    /// A URL runs from its scheme to whitespace or a quote (in prose). Its password runs from
    /// the `:` after the user name to the URL's LAST `@`, whatever it holds: a password
    /// written unencoded may contain `/`, `?`, `#` and `@`, and must be masked all the same.
    public static func redactingURLPasswords(in text: String) -> String {
        var out = ""
        var rest = Substring(text)
        while let scheme = rest.range(of: "://") {
            out += rest[..<scheme.upperBound]
            rest = rest[scheme.upperBound...]
            let end = rest.firstIndex { $0.isWhitespace || $0 == "\"" || $0 == "'" } ?? rest.endIndex
            if let password = passwordRange(in: rest[..<end]) {
                out += rest[..<password.lowerBound] + mask
                rest = rest[password.upperBound...]
            }
        }
        return out + rest
    }

    /// Where the password lies in `url`, the text of a URL after its `://`: from just after
    /// the first `:` to the last `@`, when the user name before that `:` holds none of `/?#@`
    /// (else the `:` is in the path or the query, and there is no password). nil without one.
    /// A `host:port` whose path holds an `@` is masked from the port on: more than needed,
    /// never less.
    static func passwordRange(in url: Substring) -> Range<Substring.Index>? {
        guard let colon = url.firstIndex(where: { ":/?#@".contains($0) }), url[colon] == ":",
            let at = url[colon...].lastIndex(of: "@")
        else { return nil }
        return url.index(after: colon)..<at
    }

    /// A setting meant to be a URL, as it may be shown: its password masked, with or without
    /// a scheme (`backup:S3cret@host/x` shows as `backup:***@host/x`).
    public static func redactingAddress(_ value: String) -> String {
        value.contains("://") ? redactingURLPasswords(in: value) : String(redactingURLPasswords(in: "://" + value).dropFirst(3))
    }

    /// `text` with each of `secrets` masked wherever it appears, and every URL's password.
    ///
    /// Secrets shorter than 3 characters are left alone: masking every `a` would ruin a
    /// message without protecting anything.
    public static func redacting(_ text: String, secrets: [String]) -> String {
        var out = redactingURLPasswords(in: text)
        for secret in secrets where secret.count >= 3 {
            out = out.replacingOccurrences(of: secret, with: mask)
        }
        return out
    }
}

extension ReplicaURL {
    /// The password in the base URL's userinfo, as written and percent-decoded, and each of
    /// its pieces between `/`, `?` and `#` (where a URL parser would cut it, and print only a
    /// piece); empty without one.
    public var secrets: [String] {
        guard let scheme = base.range(of: "://"), let range = SecretRedaction.passwordRange(in: base[scheme.upperBound...]) else { return [] }
        let password = String(base[range])
        guard !password.isEmpty else { return [] }
        let pieces = password.split(whereSeparator: { "/?#".contains($0) }).map(String.init).filter { $0 != password }
        return [password, password.removingPercentEncoding].compactMap { $0 } + pieces
    }

    /// The base as it may be shown: any password masked (`sftp://backup:***@host/accountd`).
    public var redacted: String { SecretRedaction.redactingURLPasswords(in: base) }

    /// `text` (a message, a program's output) with this replica's password masked wherever
    /// it appears, as written or decoded, and the password of any URL in it.
    public func redact(_ text: String) -> String { SecretRedaction.redacting(text, secrets: secrets) }
}
