import AccountdCore
import AccountdDaemon
import ArgumentParser

/// `accountd`: serve (the default), or migrate, plan and pull accounts offline.
@main
struct Accountd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accountd",
        abstract: "Keep one SQLite file per account, initialised or migrated before use.",
        discussion: """
            accountd keeps each account's SQLite file under its data root and brings it to the \
            schema bundle's version (creating or migrating it) before an app uses it. It serves \
            the line protocol and varlink (io.accountd) on Unix sockets; accountctl(1) is its \
            client. SIGHUP reloads the settings and the bundle; SIGTERM stops it once a running \
            migration has finished or rolled back.

            Units: accountd.service with accountd.socket and accountd-varlink.socket (settings \
            /etc/accountd/accountd.yaml, data root /var/lib/accountd, sockets in /run/accountd); \
            accountd@APP.service, one daemon per app (/etc/accountd/APP.yaml, \
            /var/lib/accountd-apps/APP, /run/accountd-apps/APP); and for systemctl --user, the per-user \
            accountd.service (~/.config/accountd/accountd.yaml, ~/.local/state/accountd, \
            $XDG_RUNTIME_DIR/accountd). docs/APPS.md walks an app developer through them.
            """,
        version: AccountdVersion.current,
        subcommands: [ServeCommand.self, MigrateCommand.self, PlanCommand.self, PullCommand.self, PrepareLitestreamCommand.self],
        defaultSubcommand: ServeCommand.self)

    /// Sets SQLite's process-wide settings before any command opens a connection, and the
    /// number of event loops before any uses them, then parses and runs.
    static func main() async {
        SQLiteProcess.configure()
        EventLoopCount.configure()
        await main(nil)
    }
}
