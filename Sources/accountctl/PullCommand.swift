import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl pull ACCOUNT`: bring an account from the Litestream replica.
struct PullCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pull",
        abstract: "Bring an account from the daemon's Litestream replica onto this host.",
        discussion: """
            The daemon runs `litestream restore` for the account into a temporary file, checks \
            the copy like any account file (an accountd file bound to this account, at a version \
            the bundle can read, whole by SQLite's integrity_check) and links it into place; the \
            next switch opens or migrates it. Refused (AccountExists), touching nothing, when \
            the account already has a file here. Needs a daemon running with replication and an \
            admin peer. Without a daemon, use 'accountd pull'. With --replica, the account comes             from another base URL: the old host's, for a move ('accountctl remove ACCOUNT             --handoff' there first); a pull ends a handoff of the account from this host. \
            A copy the replica holds from a handoff off this host's own replica (remove --handoff, \
            then a machine loss here) is refused with AccountMoved: another host may serve the \
            account; --reclaim takes it all the same.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The account to pull.")
    var account: String

    @Option(help: "Pull from this base URL (the old host's replica.litestream.replica) instead of the daemon's own replica.")
    var replica: String?

    @Flag(help: "Take a copy that was handed off from this host's own replica (another host may serve the account: two copies may diverge).")
    var reclaim = false

    func validate() throws {
        try validateAccountName(account)
    }

    func run() async throws {
        let reply = try await global.connect().pull(account: account, replica: replica, reclaim: reclaim)
        if global.json { return Output.json(reply.parameters) }
        print("Pulled \(reply.account) at version \(reply.version) (\(reply.sizeBytes) bytes, Litestream txid \(reply.txid ?? "unknown")).")
        print("Switch to it with 'accountctl switch \(reply.account)'.")
    }
}
