import AccountdClient
import AccountdProtocol
import ArgumentParser

/// The root of `accountctl`, the command-line client of accountd.
///
/// It holds no logic of its own: it lists the subcommands and maps every way a run
/// can end to one of the documented exit statuses (see ``main()``).
@main
struct AccountCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accountctl",
        abstract: "Drive accountd: switch accounts, query status, export, verify, snapshot, restore and remove.",
        discussion: """
            With no command, accountctl runs `status`. Every command takes --socket PATH \
            (else $ACCOUNTD_SOCKET, else \(GlobalOptions.defaultSocketPath)) and --json, \
            which prints the raw parameters of each reply, one JSON object per line.

            Exit status: 0 ok; 1 the daemon answered with an error (its name is printed) \
            or the work failed; 2 usage; 69 the daemon cannot be reached.
            """,
        subcommands: [
            StatusCommand.self, ListCommand.self, SwitchCommand.self, ExportCommand.self,
            VerifyCommand.self, PlanCommand.self, MigrateCommand.self, SnapshotsCommand.self, SnapshotCommand.self, RestoreCommand.self,
            RemoveCommand.self, ReplicationCommand.self, PullCommand.self, ImportCommand.self,
            GetCommand.self, SetCommand.self, DeleteCommand.self, KeysCommand.self, QueryCommand.self, ExecCommand.self,
            WatchCommand.self, InfoCommand.self, PingCommand.self, MetricsCommand.self, DefaultCommand.self,
        ],
        defaultSubcommand: DefaultCommand.self)

    /// Parsed here too, so the global options may come before the command
    /// (`accountctl --json list`); argument-parser hands this value on to each
    /// subcommand's `@OptionGroup` of the same type.
    @OptionGroup var global: GlobalOptions

    /// The exit status for a usage error; argument-parser's own default is 64.
    static let usageExitStatus: Int32 = 2

    /// Parses the command line, runs the command, and exits with the documented status.
    ///
    /// This replaces argument-parser's `main()` only to map usage errors (parse errors and
    /// `ValidationError`, which argument-parser exits with 64) to 2, and ``ClientError``
    /// to its own status. Help and `--generate-completion-script` keep argument-parser's
    /// behaviour. The client library's errors are mapped here, in one place.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let error as AccountdClientError {
            Output.flush()
            let error = ClientError(error)
            Terminal.printError("accountctl: \(error.message)")
            terminate(error.exitStatus)
        } catch let error as ClientError {
            Output.flush()  // what the command printed comes before the error
            Terminal.printError("accountctl: \(error.message)")
            terminate(error.exitStatus)
        } catch {
            Output.flush()
            if exitCode(for: error) == .validationFailure {
                Terminal.printError(fullMessage(for: error))
                terminate(usageExitStatus)
            }
            exit(withError: error)
        }
    }
}

/// What runs when no command is given: `status` without an account.
///
/// It is a hidden subcommand, so that `accountctl --json` works while `accountctl bogus`
/// is a usage error (exit 2) rather than `status bogus`.
struct DefaultCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "default-status",
        abstract: "Show the daemon's status (what runs with no command).",
        shouldDisplay: false)

    @OptionGroup var global: GlobalOptions

    /// Anything else on the line: a mistyped command, or an option no command knows.
    @Argument(parsing: .allUnrecognized, help: .private)
    var unexpected: [String] = []

    func run() async throws {
        if let word = unexpected.first {
            let what = word.hasPrefix("-") ? "option" : "command"
            throw ClientError.usage(
                "unknown \(what) '\(word)'\nUsage: \(AccountCtl.usageString())\n  See 'accountctl --help' for the commands.")
        }
        try await StatusCommand.showDaemonStatus(global)
    }
}
