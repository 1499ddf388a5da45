import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl verify ACCOUNT`: a full check of one account file.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check an account file's integrity, foreign keys and schema.",
        discussion: """
            Runs SQLite's integrity check and foreign-key check, compares the schema with \
            the bundle's (for a file at the bundle's version; at another version the schema \
            is not compared), and lists applied migrations whose files have changed since. \
            Exits 0 only when the account is healthy; otherwise prints the report, then \
            "account ACCOUNT is not healthy", and exits 1. Needs an admin peer.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The account to verify.")
    var account: String

    func validate() throws {
        try validateAccountName(account)
    }

    func run() async throws {
        let report = try await global.connect().verify(account: account)
        let integrity = [report.integrity]
        let foreignKeys = report.foreignKeys
        let schema = report.schema
        let edited = report.editedMigrations
        let healthy = report.healthy
        if global.json {
            Output.json(report.parameters)
        } else {
            Output.fields([
                ("account", report.account),
                ("healthy", healthy ? "yes" : "no"),
                ("integrity", integrity == ["ok"] ? "ok" : Self.problems(integrity)),
                ("foreign keys", foreignKeys.isEmpty ? "ok" : Self.problems(foreignKeys)),
                ("schema", !report.schemaCompared ? schema.joined(separator: "; ") : schema.isEmpty ? "matches the bundle" : Self.problems(schema)),
                ("edited migrations", edited.isEmpty ? "none" : Self.problems(edited.map(StatusCommand.describeEdited))),
            ])
        }
        if report.schemaCompared && !schema.isEmpty && !global.json {
            print("the schema differs from what its version should be: 'accountctl plan \(account)' shows the repair")
        }
        if !healthy { throw ClientError.failed("account \(account) is not healthy") }
    }

    /// `2 problems` and then each on its own indented line.
    private static func problems(_ lines: [String]) -> String {
        let items = lines.flatMap { $0.split(separator: "\n", omittingEmptySubsequences: true) }
        return (items.count == 1 ? "1 problem" : "\(items.count) problems")
            + items.map { "\n  - " + $0 }.joined()
    }
}
