import AccountdProtocol

/// Where Litestream keeps an account's replica, given the base URL of the directory
/// replica of `accounts/` (`replication.litestream.replica`).
///
/// Litestream's directory replication puts each database under the base at its path
/// relative to the folder: `accounts/alice.sqlite` goes to `<base>/alice.sqlite`.
/// `device.sqlite` is replicated beside the accounts under `<base>/.device.sqlite`, a name
/// no account can have (account names never begin with `.`).
public struct ReplicaURL: Sendable, Hashable, CustomStringConvertible {
    /// The base, without a trailing `/`.
    public let base: String

    public init(base: String) {
        var trimmed = Substring(base)
        while trimmed.hasSuffix("/") && !trimmed.hasSuffix("://") { trimmed = trimmed.dropLast() }
        self.base = String(trimmed)
    }

    /// `<base>/<name>`, with any query string (`?endpoint=...`) kept at the end. A `?` in
    /// the password is not a query's.
    private func child(_ name: String) -> String {
        let scheme = base.range(of: "://")
        let afterPassword = scheme.flatMap { SecretRedaction.passwordRange(in: base[$0.upperBound...])?.upperBound } ?? base.startIndex
        guard let query = base[afterPassword...].firstIndex(of: "?") else { return base + "/" + name }
        return base[..<query] + "/" + name + base[query...]
    }

    /// An account's replica: `<base>/<account>.sqlite`.
    public func account(_ account: AccountName) -> String { child(account.rawValue + ".sqlite") }

    /// The replica of `device.sqlite`: `<base>/.device.sqlite`.
    public var device: String { child(".device.sqlite") }

    /// The base with any password masked: what logs and messages show (``redacted``).
    public var description: String { redacted }
}
