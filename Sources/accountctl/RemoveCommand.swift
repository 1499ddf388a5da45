import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl remove ACCOUNT [--purge]`: remove an account, or erase it.
struct RemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove an account's file, keeping a final snapshot; or erase everything of it.",
        discussion: """
            Without --purge, a last snapshot (…-before-remove) is taken and kept like any \
            other, then the file goes; `accountctl restore ACCOUNT` brings the account \
            back. With --purge, the file, every snapshot and every other file of the \
            account under the data root are erased, and nothing can bring it back. It \
            asks nothing: what it did is printed. Your own active account is refused \
            (AccountActive): switch to another one first; another uid's active account \
            is removed all the same and is then none of theirs. Needs an admin peer. With             --handoff (replication on), the account moves to another host: Litestream syncs it             a last time, then this host refuses it (AccountMoved) until it is pulled back; on             the new host run 'accountctl pull ACCOUNT --replica THIS_HOSTS_REPLICA_URL'.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The account to remove.")
    var account: String

    @Flag(help: "Erase the account's file, its snapshots and all its other files for good.")
    var purge = false

    @Flag(help: "Hand the account off to another host: a final sync to the replica, then this host refuses it until it is pulled back.")
    var handoff = false

    func validate() throws {
        try validateAccountName(account)
        if purge && handoff { throw ValidationError("--purge and --handoff do not go together: a handoff keeps the account for the host that pulls it") }
    }

    func run() async throws {
        let reply = try await global.connect().remove(account: account, purge: purge, handoff: handoff)
        if global.json { return Output.json(reply.parameters) }
        if reply.handoff {
            print("Handed off \(account): the replica has its last state, and this host refuses it (AccountMoved) until it is pulled back.")
            print("On the new host: 'accountctl pull \(account) --replica <this host's replica URL>'.")
        } else if reply.purged {
            print("Purged \(account): its file, its snapshots and its other files under the data root were erased.")
        } else if let snapshot = reply.snapshot {
            print("Removed \(account). Its last state was kept as snapshot \(snapshot.snapshot) (version \(snapshot.version)).")
            print("Bring it back with 'accountctl restore \(account)'; erase it with 'accountctl remove \(account) --purge'.")
        } else {
            print("Removed \(account).")
        }
    }
}
