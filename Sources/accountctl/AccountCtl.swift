import AccountdProtocol
import ArgumentParser

@main
struct AccountCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accountctl",
        abstract: "Drive accountd: switch accounts, query status, export and verify.")

    func run() throws {
        throw CleanExit.message("accountctl: the daemon client is not built yet")
    }
}
