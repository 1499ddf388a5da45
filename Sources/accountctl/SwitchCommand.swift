import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl switch ACCOUNT [--no-create]`: make an account the active one.
struct SwitchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "switch",
        abstract: "Make ACCOUNT the active account, creating or migrating its file as needed.",
        discussion: """
            A missing account is created at the bundle's version, unless --no-create is \
            given (then the daemon answers AccountNotFound). An older file is migrated \
            first, after a snapshot; on a terminal a progress bar shows each step. A file \
            newer than the bundle is refused (AccountTooNew) unless it declares itself \
            compatible. Needs a write grant on ACCOUNT (or an admin peer). The last \
            line names the account file's absolute path (`path` with --json), for an \
            app that runs as the daemon's own user and opens the file itself.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The account to switch to.")
    var account: String

    @Flag(help: "Fail instead of creating the account when it does not exist.")
    var noCreate = false

    func validate() throws {
        try validateAccountName(account)
    }

    func run() async throws {
        var progress = Progress("migrating \(account)", shown: !global.json)
        var result: SwitchResult?
        for try await event in try await global.connect().switching(to: account, create: !noCreate) {
            switch event {
            case .progress(let step):
                if global.json {
                    Output.json(step.parameters)
                } else {
                    progress.update(done: Int64(step.step), total: Int64(step.of), detail: step.name, force: true)
                }
            case .finished(let last):
                result = last
            }
        }
        progress.clear()
        guard let result else { return }
        if global.json { return Output.json(result.parameters) }
        print(Self.describe(result))
    }

    /// One sentence for the last reply: what happened, the versions, how long it took; then the file.
    static func describe(_ result: SwitchResult) -> String {
        let account = result.account
        let version = result.version
        let took = " in " + Output.duration(milliseconds: result.durationMs)
        var text: String
        switch result.action {
        case "created":
            text = "Created account \(account) at version \(version) and switched to it\(took)."
        case "migrated":
            text = "Switched to \(account), migrated from version \(Output.text(result.fromVersion)) to \(version)\(took)."
        default:
            text = "Switched to \(account) (version \(version))\(took)."
        }
        if result.compatible {
            text += "\nThe file is newer than the bundle, but declares itself readable by it."
        }
        if let previous = result.previous, previous != account {
            text += "\nThe previous account was \(previous)."
        }
        text += "\nFile: \(result.path)"
        return text
    }
}
