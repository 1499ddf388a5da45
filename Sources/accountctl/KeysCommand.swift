import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl keys NAMESPACE [--account A]`: the keys set in a namespace.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "List the keys set in a namespace, one per line.",
        discussion: "Account-scoped namespaces read the active account unless --account is given.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var target: PreferenceOptions

    @Argument(help: "The namespace, e.g. user.")
    var namespace: String

    func run() async throws {
        let keys = try await global.connect().keys(namespace: namespace, account: target.account)
        if global.json { return Output.json(KeysReply(keys: keys).parameters) }
        for key in keys { print(Output.terminalSafe(key)) }
    }
}
