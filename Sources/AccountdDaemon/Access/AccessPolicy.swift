import AccountdProtocol
import Foundation

/// Decides what each peer may do: the one access decision of the daemon (SPEC sections 8
/// and 12).
///
/// Admins are root, the daemon's own uid, and the uids and groups named in `admin.users`
/// and `admin.groups`; they may call everything. Anyone else may call a per-account method
/// only as one of ``grants`` allows (``level(of:on:)``); with none, only the methods that
/// are ``Method/Access/open`` to all, `Status` without `account`, and `Get`/`Keys` of
/// device-scoped namespaces. Every per-account call goes through ``check(_:for:peer:)``
/// with the ``Need`` its method has (the dispatcher's `need(of:peer:)` says which; a new
/// method, e.g. `Query` as `.read` and `Execute` as `.write`, adds one line there).
public struct AccessPolicy: Sendable {
    public var adminUsers: Set<UInt32>
    public var adminGroups: Set<UInt32>
    public var ownUID: UInt32
    /// `access.grants`, as the settings loaded them (names resolved to ids).
    public var grants: [AccessGrant]

    /// What a call needs, its account resolved (the one named, or the caller's active one).
    public enum Need: Sendable, Hashable {
        /// Anyone may make it.
        case anyone
        /// A `read` grant on the account; nil when the caller has no active account (the call
        /// then fails with `NoActiveAccount`, which says nothing of any account).
        case read(AccountName?)
        /// A `write` grant on the account, or nil as for `read`.
        case write(AccountName?)
        /// An admin.
        case admin
    }

    public init(adminUsers: [UInt32], adminGroups: [UInt32], grants: [AccessGrant] = [], ownUID: UInt32 = getuid()) {
        self.adminUsers = Set(adminUsers)
        self.adminGroups = Set(adminGroups)
        self.grants = grants
        self.ownUID = ownUID
    }

    /// Whether `peer` is an admin.
    public func isAdmin(_ peer: PeerCredentials) -> Bool {
        if peer.uid == 0 || peer.uid == ownUID || adminUsers.contains(peer.uid) { return true }
        if adminGroups.isEmpty { return false }
        if adminGroups.contains(peer.gid) { return true }
        return !adminGroups.isDisjoint(with: peer.groups)
    }

    /// The most `peer` may do with `account`: `write` for an admin, else the highest level
    /// of the grants that apply to it and cover the account; nil for none.
    public func level(of peer: PeerCredentials, on account: AccountName) -> AccessGrant.Level? {
        if isAdmin(peer) { return .write }
        var best: AccessGrant.Level?
        for grant in grants where grant.applies(to: peer) && grant.covers(account, for: peer) {
            if best == nil || best! < grant.level { best = grant.level }
            if best == .write { break }
        }
        return best
    }

    /// Whether `peer` may read `account` (its status, preferences, export and events).
    public func mayRead(_ account: AccountName, peer: PeerCredentials) -> Bool {
        level(of: peer, on: account) != nil
    }

    /// The need of every call of `method` that a peer can know before its parameters are
    /// read: `.admin` for an admin-only method, or, for a peer that no grant applies to,
    /// for a method that needs a grant whatever its parameters (`Switch`, `Export`,
    /// `Snapshot`, `Set`, `Delete`); else `.anyone` (the full check follows, its account known).
    public func needBeforeParameters(_ method: Method, peer: PeerCredentials) -> Need {
        if method.requiresAdmin { return .admin }
        switch method {
        case .switchAccount, .export, .snapshot, .set, .delete:
            return isAdmin(peer) || grants.contains(where: { $0.applies(to: peer) }) ? .anyone : .admin
        default:
            return .anyone
        }
    }

    /// Throws `PermissionDenied` when `peer` may not make a call of `method` that needs `need`.
    public func check(_ need: Need, for method: Method, peer: PeerCredentials) throws(ProtocolError) {
        // The facts are made only for a refusal: every request is checked, few are refused.
        switch need {
        case .anyone:
            return
        case .admin:
            guard !isAdmin(peer) else { return }
            let who = "admins (root, the daemon's user, or the users and groups in admin.users and admin.groups)"
            throw ProtocolError(
                .permissionDenied,
                method.requiresAdmin
                    ? "\(method.rawValue) is for \(who) only; you are uid \(peer.uid)"
                    : "\(method.rawValue) is for \(who) and for the users and groups that access.grants gives access to the account; no grant is for uid \(peer.uid)",
                facts: [("method", .string(method.qualifiedName))])
        case .read(let account), .write(let account):
            guard let account else { return }
            let wanted: AccessGrant.Level = if case .write = need { .write } else { .read }
            if let level = level(of: peer, on: account), level >= wanted { return }
            throw ProtocolError(
                .permissionDenied,
                "\(method.rawValue) on account \(account) needs \(wanted.rawValue) access to it, which no grant in access.grants gives uid \(peer.uid); ask an admin for a grant",
                facts: [("method", .string(method.qualifiedName)), ("account", .string(account.rawValue))])
        }
    }
}
