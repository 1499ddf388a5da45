import AccountdProtocol
import ArgumentParser

/// `accountctl migrate [--all | ACCOUNT...]`: bring account files to the bundle's version.
struct MigrateCommand: ParsableCommand {
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

    func run() throws {
        let parameters: [(String, JSONValue)] =
            all ? [("all", true)] : [("accounts", .array(accounts.map { .string($0) }))]
        let total: Int64? = all ? nil : Int64(accounts.count)
        var progress = Progress("migrating", shown: !global.json)
        var done: Int64 = 0
        progress.update(done: 0, total: total, force: true)
        let summary = try global.connect().stream(.migrate, parameters) { entry in
            if global.json { return Output.json(entry) }
            guard entry["result"] != nil else { return }  // a step inside one account's migration
            done += 1
            progress.clear()
            print(Self.describe(entry))
            Output.flush()
            progress.update(done: done, total: total, detail: Output.text(entry["account"]), force: true)
        }
        progress.clear()
        let failed = summary["failed"]?.intValue ?? 0
        if global.json {
            Output.json(summary)
        } else {
            let count = summary["count"]?.intValue ?? done
            print(
                "\(count) account\(count == 1 ? "" : "s"): \(Output.text(summary["migrated"])) migrated, "
                    + "\(Output.text(summary["current"])) current, \(failed) failed")
        }
        if failed > 0 {
            throw ClientError.failed("\(failed) account\(failed == 1 ? "" : "s") failed to migrate")
        }
    }

    /// Why an account failed: `error` is either the words, or an error name with the
    /// words in `message`.
    static func failure(_ entry: JSONValue) -> String {
        let error = entry["error"]?.stringValue
        let message = entry["message"]?.stringValue
        guard let error else { return message ?? "no reason given" }
        let isName = !error.contains(" ") && error.contains(".")
        switch (isName, message) {
        case (true, let message?): return "\(ErrorName(rawValue: error).shortName): \(message)"
        case (true, nil): return ErrorName(rawValue: error).shortName
        case (false, let message?): return "\(error): \(message)"
        case (false, nil): return error
        }
    }

    /// One account's outcome on a line: `migrated  alice  3 -> 7`, `failed  bob: why`.
    static func describe(_ entry: JSONValue) -> String {
        let result = Output.text(entry["result"])
        var line = Output.pad(result, to: 8) + "  " + Output.text(entry["account"])
        switch result {
        case "migrated":
            line += "  version \(Output.text(entry["fromVersion"])) -> \(Output.text(entry["version"]))"
        case "failed":
            line += ": " + Self.failure(entry)
        default:
            if let version = entry["version"], !version.isNull { line += "  version \(Output.text(version))" }
        }
        return line
    }
}
