import AccountdCore
import ArgumentParser

/// `accountd`: serve (the default), or migrate, plan and pull accounts offline.
@main
struct Accountd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accountd",
        abstract: "Keep one SQLite file per account, initialised or migrated before use.",
        version: AccountdVersion.current,
        subcommands: [ServeCommand.self, MigrateCommand.self, PlanCommand.self, PullCommand.self],
        defaultSubcommand: ServeCommand.self)

    /// Sets SQLite's process-wide settings before any command opens a connection, then parses and runs.
    static func main() async {
        SQLiteProcess.configure()
        await main(nil)
    }
}
