import AccountdCore
import AccountdProtocol
import Foundation

extension ReplicationService {
    /// Before `account` is created here (a switch with `create`): with replication on, no
    /// file of the account here and no snapshot of it either, asks the replica whether it holds the account. If it does, a
    /// new empty file would become the replica's newest state within a second and hide the
    /// copy there; so creating is refused, naming `accountctl pull`, or with
    /// `replication.litestream.onCreate: pull` the replica's copy is pulled instead (the open
    /// that follows then opens or migrates it). Runs `litestream ltx` (awaited; no thread waits
    /// for it), and may pull, under the account's hold; the file work on `pool`.
    ///
    /// - Throws: ``AccountdError``: `accountExists` when the replica holds the account and the
    ///   setting says refuse; `storage` when the replica cannot be asked (creating it then
    ///   could shadow a copy nobody could see), or the pull's errors.
    func beforeCreating(_ account: AccountName, store: AccountStore, holding hold: AccountHold, on pool: BlockingPool) async throws {
        guard let current = settings.current else { return }
        let path = root.accountPath(account)
        let fresh = try await pool.run {
            var info = stat()
            guard lstat(path, &info) != 0, errno == ENOENT else { return false }
            // An account that lived here and was removed here (its snapshots are kept) is
            // created again on purpose: the replica then follows the new file, as before.
            return store.listSnapshots(account).isEmpty
        }
        guard fresh else { return }
        let replica = current.replica
        let source = replica.account(account)
        let shown = replica.redact(source)
        let files: [ReplicaCommand.File]
        do {
            files = try await ReplicaCommand(root: root, litestream: LitestreamProgram(executable: current.program))
                .files(source: source, redact: replica.redact, on: pool)
        } catch let error as AccountdError {
            throw AccountdError(
                .storage,
                "account \(account) was not created: the replica could not be asked whether it holds the account, and a new empty file could hide its copy there. \(error.message). Check the replica's store and credentials, then switch again",
                account: account.rawValue, file: shown)
        }
        guard let newest = files.map(\.timestamp).max() else { return }
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
            let puller = ReplicaPull(root: root, replica: replica, litestream: LitestreamProgram(executable: current.program))
            let outcome = try await store.pull(account, with: puller, holding: hold, on: pool)
            logger.notice(
                "account \(account) was pulled from the replica \(shown) instead of being created (replication.litestream.onCreate: pull), at version \(outcome.version)",
                metadata: ["account": "\(account)"])
        }
    }
}
