import AccountdProtocol
import Foundation

/// One entry of `access.grants`: who (a user or a group), which accounts (a pattern, or
/// `$user`), and what (`read` or `write`).
///
/// ```yaml
/// access:
///   grants:
///     - { group: apps,  accounts: "*",       access: read }
///     - { user: kiosk,  accounts: "kiosk-*", access: write }
///     - { group: users, accounts: "$user",   access: write }
/// ```
public struct AccessGrant: Sendable, Hashable, CustomStringConvertible {
    /// Whom a grant is for: a uid, or a gid (primary or supplementary, as the kernel
    /// reported the peer at accept). Names are resolved when the settings load.
    public enum Subject: Sendable, Hashable {
        case user(UInt32)
        case group(UInt32)
    }

    /// Which accounts a grant covers.
    public enum Accounts: Sendable, Hashable {
        /// A shell glob on the account name (fnmatch(3): `*`, `?`, `[...]`), `*` for all.
        case pattern(String)
        /// `$user`: the account named exactly like the caller's user name (its uid's
        /// `getpwuid_r` entry when it connected); a uid with no name matches nothing.
        case callerName
    }

    /// What a grant allows. `write` includes `read`.
    public enum Level: String, Sendable, Hashable, Comparable, CaseIterable {
        /// `Status {account}`, `Get`, `Keys`, `Export`, `Watch` (and `Query`) of the account.
        case read
        /// `read`, and `Switch`, `Set`, `Delete`, `Snapshot` (and `Execute`).
        case write

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs == .read && rhs == .write }
    }

    public var subject: Subject
    public var accounts: Accounts
    public var level: Level

    public init(subject: Subject, accounts: Accounts, level: Level) {
        self.subject = subject
        self.accounts = accounts
        self.level = level
    }

    /// Whether the grant is for `peer`.
    public func applies(to peer: PeerCredentials) -> Bool {
        switch subject {
        case .user(let uid): peer.uid == uid
        case .group(let gid): peer.gid == gid || peer.groups.contains(gid)
        }
    }

    /// Whether the grant covers `account` for `peer` (whom it must apply to).
    public func covers(_ account: AccountName, for peer: PeerCredentials) -> Bool {
        switch accounts {
        case .callerName: peer.userName == account.rawValue
        case .pattern(let pattern): fnmatch(pattern, account.rawValue, 0) == 0
        }
    }

    public var description: String {
        let who =
            switch subject {
            case .user(let uid): "user \(uid)"
            case .group(let gid): "group \(gid)"
            }
        let which =
            switch accounts {
            case .callerName: "$user"
            case .pattern(let pattern): pattern
            }
        return "\(who) \(level.rawValue) \(which)"
    }
}
