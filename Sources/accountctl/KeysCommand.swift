import AccountdProtocol
import ArgumentParser

/// `accountctl keys NAMESPACE [--account A]`: the keys set in a namespace.
struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "List the keys set in a namespace, one per line.",
        discussion: "Account-scoped namespaces read the active account unless --account is given.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var target: PreferenceOptions

    @Argument(help: "The namespace, e.g. user.")
    var namespace: String

    func run() throws {
        let reply = try global.connect().call(.keys, target.parameters(namespace: namespace))
        if global.json { return Output.json(reply) }
        for key in reply["keys"]?.arrayValue ?? [] { print(Output.text(key)) }
    }
}
