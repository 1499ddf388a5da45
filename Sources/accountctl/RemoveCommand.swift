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
            asks nothing: what it did is printed. The active account is refused \
            (AccountActive): switch to another one first. Needs an admin peer.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The account to remove.")
    var account: String

    @Flag(help: "Erase the account's file, its snapshots and all its other files for good.")
    var purge = false

    func validate() throws {
        try validateAccountName(account)
    }

    func run() async throws {
        let reply = try await global.connect().remove(account: account, purge: purge)
        if global.json { return Output.json(reply.parameters) }
        if reply.purged {
            print("Purged \(account): its file, its snapshots and its other files under the data root were erased.")
        } else if let snapshot = reply.snapshot {
            print("Removed \(account). Its last state was kept as snapshot \(snapshot.snapshot) (version \(snapshot.version)).")
            print("Bring it back with 'accountctl restore \(account)'; erase it with 'accountctl remove \(account) --purge'.")
        } else {
            print("Removed \(account).")
        }
    }
}
