import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl set NAMESPACE KEY VALUE [--account A]`: write one preference.
struct SetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Set a preference to a JSON value.",
        discussion: """
            VALUE is JSON text, so a string needs its quotes inside the shell's: \
            accountctl set user theme '"dark"'. Numbers, true, false, null, arrays and \
            objects go as they are; put -- before a negative number. The command returns \
            once the value is durably committed. Needs an admin peer, or a write grant on the account.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var target: PreferenceOptions

    @Argument(help: "The namespace, e.g. user.")
    var namespace: String

    @Argument(help: "The key.")
    var key: String

    @Argument(help: ArgumentHelp("The value, as JSON text.", valueName: "value"))
    var value: String

    func validate() throws {
        _ = try Self.parse(value: value)
    }

    func run() async throws {
        let value = try Self.parse(value: value)
        try await global.connect().set(namespace: namespace, key: key, value: value, account: target.account)
        if global.json { Output.json(EmptyReply().parameters) }
    }

    /// Parses VALUE as JSON.
    ///
    /// - Throws: `ValidationError` (exit 2) with a hint to quote strings, or saying which of
    ///   ``ValueLimits`` the value breaks (the daemon would refuse it alike).
    static func parse(value: String) throws -> JSONValue {
        do {
            return try JSONParser.parse(value, maximumDepth: ValueLimits.maximumDepth)
        } catch {
            if let refusal = ValueLimits.refusal(error) { throw ValidationError(refusal.message) }
            let plain = !value.isEmpty && value.count <= 40 && !value.contains { "\"'\\\n".contains($0) }
            let example = plain ? value : "dark"
            throw ValidationError(
                "VALUE must be JSON (\(error)); quote a string inside the shell's quotes, e.g. '\"\(example)\"'")
        }
    }
}
