import AccountdClient
import AccountdProtocol
import ArgumentParser

/// The `--account` option of the preference commands (`get`, `set`, `del`, `keys`).
struct PreferenceOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The account to act on (default: the active account).", valueName: "account"))
    var account: String?

    mutating func validate() throws {
        if let account { try validateAccountName(account) }
    }
}
