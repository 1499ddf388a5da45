import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl del NAMESPACE KEY [--account A]`: remove one preference.
struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "del",
        abstract: "Delete a preference.",
        discussion: "Account-scoped namespaces act on the active account unless --account is given. Needs an admin peer, or a write grant on the account.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var target: PreferenceOptions

    @Argument(help: "The namespace, e.g. user.")
    var namespace: String

    @Argument(help: "The key.")
    var key: String

    func run() async throws {
        try await global.connect().delete(namespace: namespace, key: key, account: target.account)
        if global.json { Output.json(EmptyReply().parameters) }
    }
}
