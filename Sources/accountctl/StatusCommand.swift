import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl status [ACCOUNT]`: the daemon's state, or one account's.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the active account and the daemon's state, or one account's status.",
        discussion: """
            Without ACCOUNT: the active account, the daemon's state (ready, migrating, idle), \
            the active account's schema version and the bundle's version. With ACCOUNT: \
            whether its file exists, its version against the bundle's target, its state \
            (current, outdated, too_new, compatible_newer, corrupt, missing, migrating, \
            unavailable: a full or failing disk), \
            size (and apart: the file, its WAL, its snapshots, Litestream's state), creation \
            time, last migration, and any applied migration whose file has changed since. \
            Without ACCOUNT, the migrations of any account running now are shown too. This is also what runs when no command is given.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The account to inspect; leave out for the daemon's status.")
    var account: String?

    func validate() throws {
        if let account { try validateAccountName(account) }
    }

    func run() async throws {
        guard let account else { return try await Self.showDaemonStatus(global) }
        let status = try await global.connect().status(account: account)
        if global.json { return Output.json(status.parameters) }
        var fields: [(String, String)] = [
            ("account", status.account),
            ("state", status.state),
            ("exists", status.exists ? "yes" : "no"),
            ("version", Output.text(status.version)),
            ("target", String(status.target)),
            ("size", Output.size(status.sizeBytes)),
            ("created", status.createdAt ?? "-"),
            ("last migration", Self.describeMigration(status.lastMigration)),
        ]
        let edited = status.editedMigrations
        fields.append(("edited migrations", edited.isEmpty ? "none" : "\(edited.count)"))
        if let problem = status.problem { fields.append(("problem", problem)) }
        if let disk = status.disk {
            fields.append(("file", Output.size(disk.fileBytes)))
            fields.append(("wal", Output.size(disk.walBytes)))
            fields.append(("snapshots", "\(disk.snapshots) (\(Output.size(disk.snapshotBytes)))"))
            fields.append(("litestream state", Output.size(disk.litestreamBytes)))
        }
        Output.fields(fields)
        for migration in edited { print("  " + Self.describeEdited(migration)) }
    }

    /// Prints the daemon-wide status: active account, state, versions.
    static func showDaemonStatus(_ global: GlobalOptions) async throws {
        let status = try await global.connect().status()
        if global.json { return Output.json(status.parameters) }
        var fields = [
            ("active", status.active ?? "none"),
            ("state", status.state),
            ("version", Output.text(status.version)),
            ("bundle version", String(status.bundleVersion)),
        ]
        if let problem = status.problem { fields.append(("problem", problem)) }
        if let running = status.migrationsRunning {
            fields.append(("migrations running", "\(running) (the oldest for \(status.oldestMigrationSeconds ?? 0) s)"))
        }
        if let checking = status.bundleCheckSeconds {
            fields.append(("reload", "checking a new bundle for \(checking) s (schema.checkTimeoutSeconds bounds it)"))
        }
        fields.append(("socket", global.socketPath))
        Output.fields(fields)
    }

    /// `7 add_index, applied 2025-01-02T03:04:05Z`, or `none`.
    static func describeMigration(_ migration: AccountStatusReply.LastMigration?) -> String {
        guard let migration else { return "none" }
        return "\(migration.version) \(migration.name), applied \(migration.appliedAt)"
    }

    /// One edited migration on a line: version, name, and both digests, shortened.
    static func describeEdited(_ migration: EditedMigrationInfo) -> String {
        "\(migration.version) \(migration.name): applied as "
            + "\(migration.appliedSha256.prefix(12)), the bundle's file is now \(migration.bundleSha256.prefix(12))"
    }
}
