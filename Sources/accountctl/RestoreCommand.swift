import AccountdProtocol
import ArgumentParser

/// `accountctl restore ACCOUNT [SNAPSHOT]`: put a snapshot back as the account's file.
struct RestoreCommand: ParsableCommand {
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

    func validate() throws {
        try validateAccountName(account)
        if snapshot?.isEmpty == true { throw ValidationError("the snapshot name is empty") }
    }

    func run() throws {
        var parameters: [(String, JSONValue)] = [("account", .string(account))]
        if let snapshot { parameters.append(("snapshot", .string(snapshot))) }
        let reply = try global.connect().call(.restore, parameters)
        if global.json { return Output.json(reply) }
        let restored = reply["restored"] ?? .null
        print(
            "Restored \(Output.text(reply["account"] ?? .string(account))) from snapshot "
                + "\(Output.text(restored["snapshot"])) (version \(Output.text(restored["version"])), "
                + "taken \(Output.text(restored["createdAt"])), \(Output.size(restored["sizeBytes"])))."
        )
        if let saved = reply["saved"], !saved.isNull {
            print("The file it replaced was saved as snapshot \(Output.text(saved["snapshot"])).")
        }
    }
}
