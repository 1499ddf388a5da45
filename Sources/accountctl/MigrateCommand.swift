import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl migrate [--all | ACCOUNT...]`: bring account files to the bundle's version.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Migrate accounts to the bundle's version without switching to them.",
        discussion: """
            Give the accounts, or --all for every account. Each is reported as migrated, \
            current or failed; a failed account never stops the others. Exits 1 when any \
            account failed. Needs an admin peer.
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Migrate every account.")
    var all = false

    @Argument(help: "The accounts to migrate.")
    var accounts: [String] = []

    func validate() throws {
        if all && !accounts.isEmpty { throw ValidationError("give either --all or account names, not both") }
        if !all && accounts.isEmpty { throw ValidationError("name the accounts to migrate, or give --all") }
        for account in accounts { try validateAccountName(account) }
    }

    func run() async throws {
        let total: Int64? = all ? nil : Int64(accounts.count)
        var progress = Progress("migrating", shown: !global.json)
        var done: Int64 = 0
        progress.update(done: 0, total: total, force: true)
        var summary: MigrateSummary?
        for try await event in try await global.connect().migrate(all ? .all : .accounts(accounts)) {
            switch event {
            case .account(let entry):
                if global.json {
                    Output.json(entry.parameters)
                    continue
                }
                done += 1
                progress.clear()
                print(Self.describe(entry))
                Output.flush()
                progress.update(done: done, total: total, detail: entry.account, force: true)
            case .summary(let last):
                summary = last
            }
        }
        progress.clear()
        guard let summary else { return }
        let failed = summary.failed
        if global.json {
            Output.json(summary.parameters)
        } else {
            let count = summary.count
            print(
                "\(count) account\(count == 1 ? "" : "s"): \(summary.migrated) migrated, "
                    + "\(summary.current) current, \(failed) failed")
        }
        if failed > 0 {
            throw ClientError.failed("\(failed) account\(failed == 1 ? "" : "s") failed to migrate")
        }
    }

    /// Why an account failed: `error` is either the words, or an error name with the
    /// words in `message`.
    static func failure(error: String, message: String?) -> String {
        guard !error.isEmpty else { return message ?? "no reason given" }
        let isName = !error.contains(" ") && error.contains(".")
        switch (isName, message) {
        case (true, let message?): return "\(ErrorName(rawValue: error).shortName): \(message)"
        case (true, nil): return ErrorName(rawValue: error).shortName
        case (false, let message?): return "\(error): \(message)"
        case (false, nil): return error
        }
    }

    /// One account's outcome on a line: `migrated  alice  3 -> 7`, `failed  bob: why`.
    static func describe(_ entry: MigrateResult) -> String {
        var line = Output.pad(entry.result, to: 8) + "  " + entry.account
        switch entry.outcome {
        case .done("migrated", let fromVersion, let version):
            line += "  version \(Output.text(fromVersion)) -> \(version)"
        case .done(_, _, let version):
            line += "  version \(version)"
        case .failed(let error, let message):
            line += ": " + Self.failure(error: error, message: message)
        }
        return line
    }
}
