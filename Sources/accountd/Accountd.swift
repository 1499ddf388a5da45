import AccountdCore
import ArgumentParser

@main
struct Accountd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accountd",
        abstract: "Keep one SQLite file per account, initialised or migrated before use.",
        subcommands: [MigrateCommand.self])
}
