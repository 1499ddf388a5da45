import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl snapshots ACCOUNT`: the snapshots kept of one account.
struct SnapshotsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshots",
        abstract: "List the snapshots of an account.",
        discussion: """
            A snapshot is taken before every migration, restore and removal, and on \
            demand with `accountctl snapshot ACCOUNT`. Restore one with `accountctl \
            restore ACCOUNT SNAPSHOT`. Needs an admin peer.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The account whose snapshots to list.")
    var account: String

    func validate() throws {
        try validateAccountName(account)
    }

    func run() async throws {
        let reply = try await global.connect().snapshots(account: account)
        if global.json { return Output.json(reply.parameters) }
        let snapshots = reply.snapshots
        guard !snapshots.isEmpty else { return print("No snapshots of \(account).") }
        var table = Table(headers: ["SNAPSHOT", "VERSION", "CREATED", "SIZE"], rightAligned: [1, 3])
        for snapshot in snapshots {
            table.rows.append([
                snapshot.snapshot, String(snapshot.version), snapshot.createdAt, Output.size(snapshot.sizeBytes),
            ])
        }
        table.print()
    }
}
