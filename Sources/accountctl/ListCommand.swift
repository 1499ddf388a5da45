import AccountdProtocol
import ArgumentParser

/// `accountctl list [--details]`: every account with its size, and optionally its version and state.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the accounts.",
        discussion: """
            Prints ACCOUNT and SIZE, plus VERSION and STATE with --details (which makes the \
            daemon read each file's header). With --json, one object per account, then \
            {"count": N}.
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Also show each account's schema version and state.")
    var details = false

    func run() throws {
        var table = Table(headers: details ? ["ACCOUNT", "SIZE", "VERSION", "STATE"] : ["ACCOUNT", "SIZE"])
        table.rightAligned = details ? [1, 2] : [1]
        let parameters: [(String, JSONValue)] = details ? [("details", true)] : []
        let summary = try global.connect().stream(.list, parameters) { entry in
            if global.json { return Output.json(entry) }
            var row = [Output.text(entry["account"]), Output.size(entry["sizeBytes"])]
            if details { row += [Output.text(entry["version"]), Output.text(entry["state"])] }
            table.rows.append(row)
        }
        if global.json { return Output.json(summary) }
        if table.rows.isEmpty {
            print("No accounts.")
        } else {
            table.print()
        }
    }
}
