import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl exec [--account A] SQL [PARAM...]`: write an account's own tables.
struct ExecCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exec",
        abstract: "Run one SQL statement that writes an account's tables, durably (admin, or a write grant on the account).",
        discussion: """
            Prints the rows changed and the last inserted rowid once the statement is durably \
            committed. The statement runs on the active account unless --account is given. \
            Schema changes, ATTACH, pragmas that change state, transaction control and writes \
            to accountd_* or sqlite_* tables are refused with StatementNotAllowed, the file \
            unchanged. Each PARAM binds the next ?: JSON when it parses as JSON (42, null, \
            "text", {"base64":"AAE="}), else text as it is. An outdated account is migrated \
            first; --no-migrate (admin) writes it at its stored version instead, to fix data \
            its migration cannot take before 'accountctl migrate ACCOUNT'.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var arguments: SQLArguments

    func run() async throws {
        let client = try await global.connect()
        let results = try await client.execute([try arguments.statement], account: arguments.account, migrate: !arguments.noMigrate)
        if global.json { return Output.json(ExecuteReply(results: results).parameters) }
        for result in results {
            Output.fields([("changes", String(result.changes)), ("lastInsertRowid", String(result.lastInsertRowid))])
        }
    }
}
