import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl get NAMESPACE KEY [--account A]`: read one preference.
struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print a preference's value, as JSON.",
        discussion: """
            The value is printed as compact JSON (a string keeps its quotes), so it can be \
            given back to `accountctl set` as it is. Account-scoped namespaces read the \
            active account unless --account is given. Fails with KeyNotFound when the key \
            is not set.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var target: PreferenceOptions

    @Argument(help: "The namespace, e.g. user.")
    var namespace: String

    @Argument(help: "The key.")
    var key: String

    func run() async throws {
        let value = try await global.connect().get(namespace: namespace, key: key, account: target.account)
        if global.json { return Output.json(PreferenceValue(value: value).parameters) }
        print(value.serialized())
    }
}
