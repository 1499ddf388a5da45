import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl query [--account A] SQL [PARAM...]`: read an account's own tables.
struct QueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Run one read-only SQL statement on an account's tables and print the rows.",
        discussion: """
            Prints a table, or with --json the replies as they come: {"columns":[...]}, one \
            {"rows":[[...]]} per row, then {"rowCount":N,"truncated":false}. The statement runs on \
            the active account unless --account is given, and may only read (a write, a schema \
            change or ATTACH is refused with StatementNotAllowed). Each PARAM binds the next ?: \
            JSON when it parses as JSON (42, null, "text", {"base64":"AAE="}), else text as it is.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var arguments: SQLArguments

    func run() async throws {
        let client = try await global.connect()
        var table: Table?
        var count = 0
        for try await row in await client.query(try arguments.statement, account: arguments.account, migrate: !arguments.noMigrate) {
            if table == nil {
                table = Table(headers: row.columns)
                if global.json { Output.json(QueryReply(columns: row.columns).parameters) }
            }
            count += 1
            if global.json {
                Output.json(QueryReply(rows: [row.values]).parameters)
            } else {
                table?.rows.append(row.values.map(\.cell))
            }
        }
        if global.json { return Output.json(QueryReply(rowCount: count, truncated: false).parameters) }
        table?.print()
        Terminal.printError("(\(count) row\(count == 1 ? "" : "s"))")
    }
}
