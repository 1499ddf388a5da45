import AccountdCore
import AccountdDaemon
import AccountdProtocol
import ArgumentParser
import Foundation

/// `accountd plan`: prints the SQL that would bring an account to the bundle's version,
/// reading the data root directly, without a running daemon.
struct PlanCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Print the SQL that would bring an account to the bundle's version, changing nothing.",
        discussion: """
            Reads the account's file only: nothing is written, and a running daemon may keep serving. \
            For a declarative bundle the steps are computed from the file's own schema, each lossy step \
            marked LOSSY; for a chain they are the pending migrations. The time taken to load the bundle and \
            to plan goes to standard error. Exit status 1 when no plan can be made.
            """)

    @Option(name: .long, help: "The data root.")
    var dataRoot: String

    @Option(name: .long, help: "The schema bundle folder.")
    var schema: String

    @Argument(help: "The account to plan for.")
    var account: String

    func validate() throws {
        if let problem = AccountName.problem(in: account) { throw ValidationError("\(AccountName.quoted(account)): \(problem)") }
    }

    func run() throws {
        do {
            let started = ContinuousClock.now
            let store = AccountStore(root: try DataRoot(readingOnly: dataRoot), bundle: try SchemaBundle.load(from: schema))
            let loaded = ContinuousClock.now
            let plan = try store.plan(try AccountName(account))
            let planned = ContinuousClock.now
            print(PlanReply(plan).script)
            FileHandle.standardError.write(
                Data("accountd: bundle loaded in \(Self.ms(loaded - started)), planned in \(Self.ms(planned - loaded))\n".utf8))
        } catch {
            FileHandle.standardError.write(Data("accountd: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }

    private static func ms(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.1f ms", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
    }
}
