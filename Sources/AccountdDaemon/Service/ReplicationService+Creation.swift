import AccountdCore
import AccountdProtocol
import Foundation

extension ReplicationService {
    /// Before `account` is created here (a switch with `create`): with replication on, no
    /// file of the account here and no snapshot of it either, asks the replica whether it holds the account. If it does, a
    /// new empty file would become the replica's newest state within a second and hide the
    /// copy there; so creating is refused, naming `accountctl pull`, or with
    /// `replication.litestream.onCreate: pull` the replica's copy is pulled instead (the open
    /// that follows then opens or migrates it). Runs `litestream ltx` (awaited, within
    /// ``LitestreamProgram/listingTimeout``; no thread waits for it), and may pull, under the
    /// account's hold; the file work on `pool`.
    ///
    /// - Throws: ``AccountdError``: `accountExists` when the replica holds the account and the
    ///   setting says refuse; `storage` when the replica cannot be asked or does not answer in
    ///   time (creating it then could shadow a copy nobody could see), or the pull's errors.
    func beforeCreating(_ account: AccountName, store: AccountStore, holding hold: AccountHold, on pool: BlockingPool) async throws {
        guard let current = settings.current,
            let newest = try await replicaHolds(account, store: store, current: current, doing: "created", on: pool)
        else { return }
        let shown = current.replica.redact(current.replica.account(account))
        let when = LitestreamTime.format(newest)
        switch current.onCreate {
        case .refuse:
            logger.warning(
                "account \(account) was not created: the replica \(shown) holds it (changes up to \(when)); 'accountctl pull \(account)' brings it back",
                metadata: ["account": "\(account)"])
            throw AccountdError(
                .accountExists,
                "account \(account) does not exist here, but the replica \(shown) holds it (changes up to \(when)); creating it empty would make an empty file the replica's newest state. "
                    + "Bring it back with 'accountctl pull \(account)', then switch to it (or set replication.litestream.onCreate: pull to pull on switch)",
                account: account.rawValue, file: shown)
        case .pull:
            let puller = try self.puller()
            let outcome = try await store.pull(account, with: puller, holding: hold, on: pool)
            logger.notice(
                "account \(account) was pulled from the replica \(shown) instead of being created (replication.litestream.onCreate: pull), at version \(outcome.version)",
                metadata: ["account": "\(account)"])
        }
    }

    /// Before a file is imported as `account` (`Import`): the same guard as a creation. With
    /// replication on, no file and no snapshot of the account here, the replica is asked; if it
    /// holds the account, the import is refused (the imported file would become the replica's
    /// newest state and hide the copy there) unless `overReplica`. Under the account's hold.
    ///
    /// - Throws: ``AccountdError``: `accountExists` when the replica holds the account;
    ///   `storage` when it cannot be asked or does not answer in time.
    func beforeImporting(_ account: AccountName, overReplica: Bool, store: AccountStore, on pool: BlockingPool) async throws {
        guard let current = settings.current else { return }
        let shown = current.replica.redact(current.replica.account(account))
        if overReplica {
            logger.notice(
                "account \(account) is imported without asking the replica \(shown) (overReplica): once Litestream ships it, it is the replica's newest state",
                metadata: ["account": "\(account)"])
            return
        }
        guard let newest = try await replicaHolds(account, store: store, current: current, doing: "imported", on: pool) else { return }
        throw AccountdError(
            .accountExists,
            "account \(account) was not imported: the replica \(shown) holds it (changes up to \(LitestreamTime.format(newest))), and the imported file would become the replica's newest state and hide that copy. "
                + "Bring it back with 'accountctl pull \(account)', import under another name (with --rebind), or import over it with --over-replica (overReplica: true); nothing was changed",
            account: account.rawValue, file: shown)
    }

    /// The time of the newest change the replica holds for `account`, when a new file of it
    /// here could hide that copy: nil when the account has a file or snapshots here (it lived
    /// here, and the replica follows it as before) or the replica holds nothing for it.
    ///
    /// - Throws: `storage` when the replica cannot be asked or does not answer in time,
    ///   saying the account was not `doing` (created, imported).
    private func replicaHolds(
        _ account: AccountName, store: AccountStore, current: ReplicationSettings, doing: String, on pool: BlockingPool
    ) async throws -> Date? {
        let path = root.accountPath(account)
        let fresh = try await pool.run {
            var info = stat()
            guard lstat(path, &info) != 0, errno == ENOENT else { return false }
            // An account that lived here and was removed here (its snapshots are kept) is
            // made again on purpose: the replica then follows the new file, as before.
            return store.listSnapshots(account).isEmpty
        }
        guard fresh else { return nil }
        let replica = current.replica
        let source = replica.account(account)
        do {
            let files = try await ReplicaCommand(root: root, litestream: current.litestream(runs: runs))
                .files(source: source, redact: replica.redact, on: pool)
            return files.map(\.timestamp).max()
        } catch let error as AccountdError {
            throw AccountdError(
                .storage,
                "account \(account) was not \(doing): the replica could not be asked whether it holds the account, and a new file could hide its copy there. \(error.message). Check the replica's store and credentials, then try again",
                account: account.rawValue, file: replica.redact(source))
        }
    }
}
