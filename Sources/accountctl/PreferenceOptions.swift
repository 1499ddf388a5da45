import AccountdProtocol
import ArgumentParser

/// The `--account` option of the preference commands (`get`, `set`, `del`, `keys`).
struct PreferenceOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The account to act on (default: the active account).", valueName: "account"))
    var account: String?

    mutating func validate() throws {
        if let account { try validateAccountName(account) }
    }

    /// The request parameters for `namespace`, `key` and the account when one is given.
    func parameters(namespace: String, key: String? = nil) -> [(String, JSONValue)] {
        var pairs: [(String, JSONValue)] = [("namespace", .string(namespace))]
        if let key { pairs.append(("key", .string(key))) }
        if let account { pairs.append(("account", .string(account))) }
        return pairs
    }
}
