import AccountdCore
import AccountdDaemon
import AccountdProtocol
import ArgumentParser
import Foundation

/// `accountd pull`: brings an account from a Litestream replica onto a data root, without a daemon.
struct PullCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pull",
        abstract: "Bring an account from a Litestream replica onto a data root, without serving.",
        discussion: """
            Runs `litestream restore` of <replica>/<account>.sqlite into a temporary file under the \
            data root, checks the copy like any account file (an accountd file bound to this \
            account, whole by SQLite's integrity_check), puts it in WAL mode and links it into \
            place; the next switch opens or migrates it. Refused, touching nothing, when the \
            account already has a file there, and (AccountMoved) when the copy is marked as handed off \
            from that replica (remove --handoff) and that replica is this host's own (its daemon's \
            settings, --config; unknown counts as own), unless --reclaim: the host it moved to may serve it. The litestream program is found on PATH, or given \
            with --litestream. Exit status 1 when the pull failed.
            """)

    @Option(name: .long, help: "The base URL of the Litestream directory replica of accounts/ (replication.litestream.replica).")
    var replica: String

    @Option(name: .long, help: "The data root.")
    var dataRoot: String

    @Option(name: .long, help: "The litestream program (default: litestream on PATH).")
    var litestream: String = "litestream"

    @Argument(help: "The account to pull.")
    var account: String

    @Option(name: .long, help: "The daemon's config file, read for this host's own replica (replication.litestream.replica; default: the daemon's settings, if any).")
    var config: String?

    @Flag(help: "Take a copy marked as handed off from this replica (remove --handoff on the host it served, then lost): another host may serve the account.")
    var reclaim = false

    func validate() throws {
        if let problem = AccountName.problem(in: account) { throw ValidationError("\(AccountName.quoted(account)): \(problem)") }
        if let problem = ReplicaAddress.problem(in: replica) { throw ValidationError("--replica cannot be used: \(problem)") }
    }

    func run() async throws {
        umask(0o077)
        let name = try! AccountName(account)
        do {
            let root = try DataRoot(dataRoot)
            // Run as root, what this pull creates goes to the data root's owner: the daemon runs as that user.
            defer { MigrateCommand.keepOwner(root) }
            let lock: DataRootLock
            do {
                lock = try DataRootLock(root: root.path)
            } catch {
                throw ValidationError("\(error); use 'accountctl pull \(account)' to pull through the running daemon")
            }
            defer { _ = lock }
            // What an earlier pull or daemon that died mid-command left (under the lock).
            try root.clearLitestreamLeftovers()
            // Run as root on another user's data root, Litestream runs as that user: it can
            // write nothing that user could not, whatever that user planted in the data root.
            let program = LitestreamProgram(executable: litestream, user: root.foreignOwner())
            var puller = ReplicaPull(root: root, replica: ReplicaURL(base: replica), litestream: program)
            // A copy marked as handed off from the replica it comes from is refused when that is
            // this host's own replica (from the daemon's settings; unknown counts as own),
            // unless reclaimed (HandoffMark).
            puller.home = try await ownReplica()
            puller.reclaim = reclaim
            try AccountStore.refusePullOfOwnHandoff(name, root: root, from: puller.replica)
            // A command of its own: its steps may block this program's threads.
            let outcome = try await puller.pullHere(name)
            print("\(name): pulled at version \(outcome.version) (\(outcome.sizeBytes) bytes, Litestream txid \(outcome.txid ?? "unknown"))")
        } catch {
            FileHandle.standardError.write(Data("accountd: \(account): \(error)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// This host's own replica, from the daemon's settings (`--config`, else its default file
    /// and environment); nil when replication is off there or, without `--config`, the
    /// settings cannot be read.
    private func ownReplica() async throws -> String? {
        do {
            return try await SettingsLoader(flags: .init(config: config, dataRoot: dataRoot)).load().replication?.replica.base
        } catch where config == nil {
            return nil
        }
    }
}
