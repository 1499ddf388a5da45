import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl snapshot ACCOUNT [--label L]`: take a snapshot of an account now.
struct SnapshotCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot",
        abstract: "Take a snapshot of an account now.",
        discussion: """
            The snapshot is a consistent copy of the account file, named \
            TIMESTAMP-vVERSION-LABEL (LABEL is "manual" when left out), listed by \
            `accountctl snapshots ACCOUNT` and restored with `accountctl restore ACCOUNT \
            SNAPSHOT`. Older snapshots then go as accounts.snapshotsToKeep and \
            accounts.snapshotMaxAgeDays say. Needs an admin peer, or a write grant on the account.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The account to take a snapshot of.")
    var account: String

    @Option(help: "A label for the snapshot's name: 1 to \(SnapshotLabel.maximumLength) characters from A-Z a-z 0-9 . _ -, beginning with a letter or digit.")
    var label: String?

    func validate() throws {
        try validateAccountName(account)
        if let label, let reason = SnapshotLabel.problem(in: label) {
            throw ValidationError("invalid snapshot label \(AccountName.quoted(label)): \(reason)")
        }
    }

    func run() async throws {
        let snapshot = try await global.connect().snapshot(account: account, label: label)
        if global.json { return Output.json(snapshot.parameters) }
        print(
            "Took snapshot \(snapshot.snapshot) of \(account) (version \(snapshot.version), "
                + "\(Output.size(snapshot.sizeBytes)))."
        )
    }
}
