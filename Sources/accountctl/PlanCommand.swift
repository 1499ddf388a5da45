import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl plan ACCOUNT`: the SQL that would bring an account to the bundle's version.
struct PlanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Print the SQL that would bring an account to the bundle's version, changing nothing.",
        discussion: """
            For a declarative bundle, the steps are computed from the account's own schema, \
            as a switch would compute them; a step that loses data is marked LOSSY and begins \
            with '-- lossy:' lines saying what it loses. For an account at the bundle's \
            version whose schema drifted, the plan is the repair. For a chain of migrations, \
            the steps are the pending migrations' text. Needs an admin peer.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The account to plan for.")
    var account: String

    func validate() throws {
        try validateAccountName(account)
    }

    func run() async throws {
        let plan = try await global.connect().plan(account: account)
        if global.json {
            Output.json(plan.parameters)
            return
        }
        print(plan.script)
    }
}
