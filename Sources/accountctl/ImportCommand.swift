import AccountdClient
import AccountdProtocol
import ArgumentParser
import Foundation

/// `accountctl import ACCOUNT FILE [--rebind] [--over-replica]`: bring an export or a copied account file back.
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Bring an exported .sqlite or .sql file, or an account file copied off a machine, back as a new account.",
        discussion: """
            The daemon reads FILE itself (give a path it can reach; a relative path is made \
            absolute here): a regular file, named without symbolic links, outside the data \
            root, readable by you. It is checked like a pulled file (an accountd file bound to \
            ACCOUNT, at a version the bundle can read, whole by SQLite's integrity_check) and \
            linked into place; the next switch opens or migrates it. A jsonl export carries no \
            schema and cannot be imported. Refused (AccountExists), touching nothing, when the \
            account exists, and with replication on when the replica holds the account (pull \
            it instead, or pass --over-replica). Needs an admin peer.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The new account's name.")
    var account: String

    @Argument(help: "The file to import: a sqlite or sql export, or an account file.")
    var file: String

    @Flag(help: "Take a file bound to another account name, binding the copy to ACCOUNT.")
    var rebind = false

    @Flag(help: "Import even when the replica holds ACCOUNT: the imported file becomes the replica's newest state.")
    var overReplica = false

    func validate() throws {
        try validateAccountName(account)
        if file.isEmpty { throw ValidationError("the file name is empty") }
    }

    func run() async throws {
        let path = file.hasPrefix("/") ? file : FileManager.default.currentDirectoryPath + "/" + file
        let reply = try await global.connect().importFile(account: account, path: path, rebind: rebind, overReplica: overReplica)
        if global.json { return Output.json(reply.parameters) }
        print("Imported \(reply.account) at version \(reply.version) (\(reply.rows) rows) from \(path).")
        print("Switch to it with 'accountctl switch \(reply.account)'.")
    }
}
