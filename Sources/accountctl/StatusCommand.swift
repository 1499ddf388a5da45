import AccountdProtocol
import ArgumentParser

/// `accountctl status [ACCOUNT]`: the daemon's state, or one account's.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the active account and the daemon's state, or one account's status.",
        discussion: """
            Without ACCOUNT: the active account, the daemon's state (ready, migrating, idle), \
            the active account's schema version and the bundle's version. With ACCOUNT: \
            whether its file exists, its version against the bundle's target, its state \
            (current, outdated, too_new, compatible_newer, corrupt, missing, migrating), \
            size, creation time, last migration, and any applied migration whose file has \
            changed since. This is also what runs when no command is given.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The account to inspect; leave out for the daemon's status.")
    var account: String?

    func validate() throws {
        if let account { try validateAccountName(account) }
    }

    func run() throws {
        guard let account else { return try Self.showDaemonStatus(global) }
        let status = try global.connect().call(.status, [("account", .string(account))])
        if global.json { return Output.json(status) }
        var fields: [(String, String)] = [
            ("account", Output.text(status["account"])),
            ("state", Output.text(status["state"])),
            ("exists", Output.text(status["exists"])),
            ("version", Output.text(status["version"])),
            ("target", Output.text(status["target"])),
            ("size", Output.size(status["sizeBytes"])),
            ("created", Output.text(status["createdAt"])),
            ("last migration", Self.describeMigration(status["lastMigration"])),
        ]
        let edited = status["editedMigrations"]?.arrayValue ?? []
        fields.append(("edited migrations", edited.isEmpty ? "none" : "\(edited.count)"))
        if let problem = status["problem"], !problem.isNull { fields.append(("problem", Output.text(problem))) }
        Output.fields(fields)
        for migration in edited { print("  " + Self.describeEdited(migration)) }
    }

    /// Prints the daemon-wide status: active account, state, versions.
    static func showDaemonStatus(_ global: GlobalOptions) throws {
        let status = try global.connect().call(.status)
        if global.json { return Output.json(status) }
        Output.fields([
            ("active", status["active"].map { $0.isNull ? "none" : Output.text($0) } ?? "none"),
            ("state", Output.text(status["state"])),
            ("version", Output.text(status["version"])),
            ("bundle version", Output.text(status["bundleVersion"])),
            ("socket", global.socketPath),
        ])
    }

    /// `7 add_index, applied 2025-01-02T03:04:05Z`, or `none`.
    static func describeMigration(_ migration: JSONValue?) -> String {
        guard let migration, !migration.isNull else { return "none" }
        var text = "\(Output.text(migration["version"])) \(Output.text(migration["name"]))"
        if let applied = migration["appliedAt"]?.stringValue { text += ", applied \(applied)" }
        return text
    }

    /// One edited migration on a line: version, name, and both digests, shortened.
    static func describeEdited(_ migration: JSONValue) -> String {
        func short(_ value: JSONValue?) -> String { String(Output.text(value).prefix(12)) }
        return "\(Output.text(migration["version"])) \(Output.text(migration["name"])): applied as "
            + "\(short(migration["appliedSha256"])), the bundle's file is now \(short(migration["bundleSha256"]))"
    }
}
