import AccountdCore
import AccountdDaemon
import AccountdProtocol
import Foundation

/// Before `accountd migrate --create` creates an account on a data root whose daemon
/// replicates (replication read from the daemon's own config and environment, or `--replica`):
/// the same guard as the daemon's switch. An account with neither a file nor a snapshot here
/// is first looked up in the replica; if the replica holds it, a new empty file would become
/// the replica's newest state once Litestream runs, so creating it is refused (naming
/// `accountd pull`), or with `replication.litestream.onCreate: pull` the replica's copy is
/// pulled instead. When the replica cannot be asked, creating is refused.
struct OfflineCreationGuard {
    let root: DataRoot
    let store: AccountStore
    let replica: ReplicaURL
    let litestream: LitestreamProgram
    let onCreate: ReplicationSettings.OnCreate

    /// Runs blocking work inline: this command runs alone, its steps may block its threads.
    struct Inline: BlockingRunner {
        func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T { try body() }
    }

    /// Asks the replica about `account` when creating it here could hide the replica's copy;
    /// returns a line saying what was done instead (a pull), or nil when creating may go on.
    ///
    /// - Throws: ``AccountdError``: `accountExists` when the replica holds the account and
    ///   onCreate is refuse; `storage` when the replica cannot be asked; a pull's errors.
    func check(_ account: AccountName) async throws -> String? {
        var info = stat()
        guard lstat(root.accountPath(account), &info) != 0, errno == ENOENT, store.listSnapshots(account).isEmpty else { return nil }
        let source = replica.account(account)
        let shown = replica.redact(source)
        let files: [ReplicaCommand.File]
        do {
            files = try await ReplicaCommand(root: root, litestream: litestream).files(source: source, redact: replica.redact, on: Inline())
        } catch let error as AccountdError {
            throw AccountdError(
                .storage,
                "account \(account) was not created: the replica could not be asked whether it holds the account, and a new file could hide its copy there once Litestream runs. \(error.message). Check the replica's store and credentials, then try again",
                account: account.rawValue, file: shown)
        }
        guard let newest = files.map(\.timestamp).max() else { return nil }
        switch onCreate {
        case .refuse:
            throw AccountdError(
                .accountExists,
                "account \(account) does not exist here, but the replica \(shown) holds it (changes up to \(LitestreamTime.format(newest))); creating it empty would make an empty file the replica's newest state. "
                    + "Bring it back with 'accountd pull --replica URL --data-root \(root.path) \(account)' (or set replication.litestream.onCreate: pull), then migrate it",
                account: account.rawValue, file: shown)
        case .pull:
            // Run as root on another user's data root, the restore runs as that user (as `accountd pull`).
            var program = litestream
            program.user = root.foreignOwner()
            let outcome = try await ReplicaPull(root: root, replica: replica, litestream: program).pullHere(account)
            return "\(account): pulled from the replica \(shown) instead of being created (replication.litestream.onCreate: pull), at version \(outcome.version)"
        }
    }
}
