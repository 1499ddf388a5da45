import AccountdCore
import AccountdProtocol
import Logging
import ServiceLifecycle

/// The active accounts when who may read what changes: a grant (or an admin's rights) taken
/// away by a reload or a restart, or an account removed by an admin.
///
/// A uid's active account is where its calls without `account` go, so it only stands while
/// that uid may read it. One it may no longer read is cleared, in memory at once and then in
/// `state.json` (in turn with the switches' saves), so that its next call without `account`
/// gets `NoActiveAccount`, its `Status` says no account is active, and nothing (a restart, a
/// `Remove`) still finds it there.
extension SwitchService {
    /// `peer`'s active account, when `policy` lets `peer` read it; nil when it has none.
    ///
    /// Whether a uid may still read its active account is judged with the credentials of the
    /// process that made it active (``noteSwitcher(_:of:)``), or, for one made active before
    /// this start, of the first call of that uid that could read it, and until then of the
    /// user as the user database has it (``PeerCredentials/ofUser(_:)``). A call from another
    /// process of the uid with fewer groups does not end it for the others: it gets the
    /// account, and with it `PermissionDenied`, as before. One that those credentials may no
    /// longer read either (a reload or a restart took the grant away) is cleared as the uid's
    /// active account, at once, and in `state.json` shortly after (by ``ClearedAccountSaver``,
    /// in turn with the switches' saves); nil is returned, so the call gets `NoActiveAccount`.
    func active(for peer: PeerCredentials, under policy: AccessPolicy) -> AccountName? {
        let (active, switcher) = state.withLock { ($0.active[peer.uid], $0.switchers[peer.uid]) }
        guard let account = active else { return nil }
        if policy.mayRead(account, peer: peer) {
            if switcher == nil {
                state.withLock { if $0.active[peer.uid] == account, $0.switchers[peer.uid] == nil { $0.switchers[peer.uid] = peer } }
            }
            return account
        }
        if let switcher, policy.mayRead(account, peer: switcher) { return account }
        // Not seen since the start: a process of the user without the group that grants it
        // (a cron job) must not end it for the user's own app (hostile31d F1).
        if switcher == nil, let user = PeerCredentials.ofUser(peer.uid), policy.mayRead(account, peer: user) { return account }
        let cleared = clear(account, of: [peer.uid])
        guard !cleared.isEmpty else { return nil }
        logger.notice(
            "uid \(peer.uid) may no longer read its active account \(account) (access.grants or admin.* changed); it has no active account now",
            metadata: ["account": "\(account)", "peer_uid": "\(peer.uid)"])
        clearedSaves.continuation.yield(ClearedActive(account: account, uids: cleared))
        return nil
    }

    /// The saved active account start-up is still opening for `uid` (``Opening``), with why
    /// it is not open yet; nil when there is none.
    func opening(for uid: UInt32) -> (account: AccountName, problem: String?)? {
        state.withLock { state in
            guard state.active[uid] == nil, let opening = state.opening[uid] else { return nil }
            return (opening.account, opening.problem)
        }
    }

    /// Forgets that a `Query` or `Execute` migrated `account` (a restore replaced its file, so
    /// its reopen reports what it does itself).
    func forgetMigrationInUse(_ account: AccountName) {
        _ = state.withLock { $0.migratedInUse.removeValue(forKey: account) }
    }

    /// Notes `peer` as the one whose `Switch` made `account` its uid's active account, so a
    /// reload can judge its access with the credentials it switched with.
    func noteSwitcher(_ peer: PeerCredentials, of account: AccountName) {
        state.withLock { if $0.active[peer.uid] == account { $0.switchers[peer.uid] = peer } }
    }

    /// After a reload put `policy` in force: clears, durably, the active account of every uid
    /// that may no longer read it, as the credentials it switched with (or first read it
    /// with, this run) say. A uid not seen since the start is judged at its next call
    /// (``active(for:under:)``).
    func dropUnreadable(under policy: AccessPolicy) async {
        let lost = state.withLock { state in
            var lost: [(UInt32, AccountName)] = []
            for (uid, peer) in state.switchers {
                if let account = state.active[uid], !policy.mayRead(account, peer: peer) { lost.append((uid, account)) }
            }
            return lost
        }
        for (uid, account) in lost.sorted(by: { $0.0 < $1.0 }) {
            let cleared = clear(account, of: [uid])
            guard !cleared.isEmpty else { continue }
            logger.notice(
                "reload: uid \(uid) may no longer read its active account \(account); it has no active account now (its calls without account get NoActiveAccount)",
                metadata: ["account": "\(account)", "peer_uid": "\(uid)"])
            await saveCleared(account, of: cleared)
        }
    }

    /// After `account` was removed (or purged, or handed off): clears it as the active
    /// account of every uid that had it, in memory and in `state.json`, and says which.
    ///
    /// A failure to write `state.json` is logged, not thrown: the removal is done, and a
    /// saved account that no longer exists opens as none at the next start.
    func releaseRemoved(_ account: AccountName) async {
        let holders = state.withLock { state in
            state.uids(of: account) + state.opening.filter { entry in entry.value.account == account }.map(\.key)
        }
        let cleared = clear(account, of: holders)
        for uid in cleared.sorted() {
            logger.notice(
                "account \(account) was removed while it was the active account of uid \(uid), which has no active account now",
                metadata: ["account": "\(account)", "peer_uid": "\(uid)"])
        }
        // The saved record may name it for a uid not active in this run (opening, or failed at start-up).
        await saveCleared(account, of: nil)
    }

    /// Clears `account` as the active (or opening) account of those of `uids` that have it;
    /// returns those.
    private func clear(_ account: AccountName, of uids: [UInt32]) -> [UInt32] {
        state.withLock { state in
            var cleared: [UInt32] = []
            for uid in Set(uids) where state.active[uid] == account || state.opening[uid]?.account == account {
                if state.active[uid] == account { state.active[uid] = nil }
                if state.opening[uid]?.account == account { state.opening[uid] = nil }
                state.switchers[uid] = nil
                if state.failures[uid]?.account == account { state.failures[uid] = nil }
                cleared.append(uid)
            }
            let inUse = Set(state.active.values)
            state.versions = state.versions.filter { inUse.contains($0.key) }
            return cleared
        }
    }

    /// Erases `account` from `state.json` as the entry of `uids` (every uid when nil), for
    /// those whose active account it no longer is, in turn with the switches' saves (so a
    /// switch back to it committed meanwhile stands); the write on a pool thread.
    func saveCleared(_ account: AccountName, of uids: [UInt32]?) async {
        do {
            try await commits.run { [self] in
                try await pool.run {
                    var saved = try self.record.readAll()
                    let active = self.state.withLock { $0.active }
                    let stale = saved.filter { uid, named in
                        named == account && active[uid] != account && (uids?.contains(uid) ?? true)
                    }
                    guard !stale.isEmpty else { return }
                    for uid in stale.keys { saved[uid] = nil }
                    try self.record.save(saved)
                }
            }
        } catch {
            logger.error(
                "account \(account) is no longer an active account, but \(root.statePath) could not be rewritten: \(error); the next switch rewrites it",
                metadata: ["account": "\(account)", "error": "\(error)"])
        }
    }
}

/// An account cleared as the active account of `uids`, to be erased from `state.json`.
struct ClearedActive: Sendable {
    let account: AccountName
    let uids: [UInt32]
}

/// Saves to `state.json` the active accounts calls cleared (``SwitchService/active(for:under:)``
/// answers on an event loop and cannot wait for a disk), one after another, for as long as
/// the daemon runs; at a graceful shutdown it saves those already cleared, then ends.
struct ClearedAccountSaver: Service {
    let switching: SwitchService

    func run() async {
        let saves = switching.clearedSaves
        await withGracefulShutdownHandler {
            for await cleared in saves.stream { await switching.saveCleared(cleared.account, of: cleared.uids) }
        } onGracefulShutdown: {
            saves.continuation.finish()
        }
    }
}
