import AccountdProtocol
import ArgumentParser

/// `accountctl switch ACCOUNT [--no-create]`: make an account the active one.
struct SwitchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "switch",
        abstract: "Make ACCOUNT the active account, creating or migrating its file as needed.",
        discussion: """
            A missing account is created at the bundle's version, unless --no-create is \
            given (then the daemon answers AccountNotFound). An older file is migrated \
            first, after a snapshot; on a terminal a progress bar shows each step. A file \
            newer than the bundle is refused (AccountTooNew) unless it declares itself \
            compatible. Needs an admin peer.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The account to switch to.")
    var account: String

    @Flag(help: "Fail instead of creating the account when it does not exist.")
    var noCreate = false

    func validate() throws {
        try validateAccountName(account)
    }

    func run() throws {
        var progress = Progress("migrating \(account)", shown: !global.json)
        let parameters: [(String, JSONValue)] = [("account", .string(account)), ("create", .bool(!noCreate))]
        let result = try global.connect().stream(.switchAccount, parameters) { step in
            if global.json { return Output.json(step) }
            progress.update(
                done: step["step"]?.intValue ?? 0, total: step["of"]?.intValue,
                detail: Output.text(step["name"]), force: true)
        }
        progress.clear()
        if global.json { return Output.json(result) }
        print(Self.describe(result))
    }

    /// One sentence for the last reply: what happened, the versions, how long it took.
    static func describe(_ result: JSONValue) -> String {
        let account = Output.text(result["account"])
        let version = Output.text(result["version"])
        let took = result["durationMs"].flatMap(Self.milliseconds).map { " in " + Output.duration(milliseconds: $0) } ?? ""
        var text: String
        switch result["action"]?.stringValue {
        case "created":
            text = "Created account \(account) at version \(version) and switched to it\(took)."
        case "migrated":
            text = "Switched to \(account), migrated from version \(Output.text(result["fromVersion"])) to \(version)\(took)."
        default:
            text = "Switched to \(account) (version \(version))\(took)."
        }
        if result["compatible"]?.boolValue == true {
            text += "\nThe file is newer than the bundle, but declares itself readable by it."
        }
        if let previous = result["previous"]?.stringValue, previous != account {
            text += "\nThe previous account was \(previous)."
        }
        return text
    }

    private static func milliseconds(_ value: JSONValue) -> Double? {
        switch value {
        case .int(let number): Double(number)
        case .double(let number): number
        default: nil
        }
    }
}
