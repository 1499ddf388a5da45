import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl restore ACCOUNT [SNAPSHOT]`: put a snapshot back as the account's file.
struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Replace an account's file with one of its snapshots.",
        discussion: """
            Without SNAPSHOT, the newest snapshot is restored. The current file is saved \
            as a snapshot first, so a restore can itself be undone; the snapshot being \
            restored is kept. A removed account (`accountctl remove`, without --purge) \
            is brought back this way. List the snapshots with `accountctl snapshots \
            ACCOUNT`. Needs an admin peer.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The account to restore.")
    var account: String

    @Argument(help: "The snapshot to restore, as `snapshots` lists it; the newest if left out.")
    var snapshot: String?

    @Flag(help: "Restore an account handed off from this host all the same, ending the handoff (two hosts may then hold diverging copies).")
    var reclaim = false

    func validate() throws {
        try validateAccountName(account)
        if snapshot?.isEmpty == true { throw ValidationError("the snapshot name is empty") }
    }

    func run() async throws {
        let reply = try await global.connect().restore(account: account, snapshot: snapshot, reclaim: reclaim)
        if global.json { return Output.json(reply.parameters) }
        let restored = reply.restored
        print(
            "Restored \(reply.account) from snapshot "
                + "\(restored.snapshot) (version \(restored.version), "
                + "taken \(restored.createdAt), \(Output.size(restored.sizeBytes)))."
        )
        if let saved = reply.saved {
            print("The file it replaced was saved as snapshot \(saved.snapshot).")
        }
        guard let reopened = reply.reopened else { return }
        if reopened.failed {
            print("The account is active, and its restored file could not be brought to the bundle; it stays at version \(reopened.version):")
            print("  " + (reopened.problem ?? "no reason given"))
            throw ClientError.failed("account \(reply.account) was restored but not reopened; 'accountctl status' shows the daemon's state")
        }
        print("The account is active and was \(reopened.action) again at version \(reopened.version).")
    }
}
