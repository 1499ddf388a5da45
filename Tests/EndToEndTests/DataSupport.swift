import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Requests and checks shared by the `Query` and `Execute` tests.
enum DataCalls {
    /// A JSON request line for `io.accountd.METHOD`.
    static func line(_ method: String, _ parameters: [(String, JSONValue)], more: Bool = false) -> String {
        var pairs: [(String, JSONValue)] = [("method", .string("io.accountd." + method)), ("parameters", .object(parameters))]
        if more { pairs.append(("more", true)) }
        return JSONValue.object(pairs).serialized()
    }

    /// An `Execute` of `statements` (each SQL with positional parameters) on `account`.
    static func execute(_ account: String, _ statements: [(String, [JSONValue])]) -> String {
        let items: [JSONValue] = statements.map { sql, values in
            .object([("sql", .string(sql)), ("parameters", .array(values))])
        }
        return line("Execute", [("account", .string(account)), ("statements", .array(items))])
    }

    /// A `Query` of `sql` on `account`.
    static func query(_ account: String, _ sql: String, _ values: [JSONValue] = [], maxRows: Int? = nil, more: Bool = false) -> String {
        var parameters: [(String, JSONValue)] = [("account", .string(account)), ("sql", .string(sql)), ("parameters", .array(values))]
        if let maxRows { parameters.append(("maxRows", JSONValue(maxRows))) }
        return line("Query", parameters, more: more)
    }

    /// The rows of `user_info` and `app_data`, the schema and the version, read through the
    /// daemon: what a refusal must leave as it was. (Not with the `sqlite3` shell: while the
    /// daemon has the file open, another process's connection must not be the one to close it.)
    static func contents(_ client: RawClient, _ account: String = "alice") throws -> [JSONValue] {
        try [
            "SELECT * FROM user_info ORDER BY user_id", "SELECT * FROM app_data ORDER BY key",
            "SELECT type, name, sql FROM sqlite_master ORDER BY name", "PRAGMA user_version",
        ].map { sql in
            let reply = try client.callOne(query(account, sql))
            try #require(reply.error == nil, "\(sql): \(reply.parameters)")
            return reply.parameters["rows"] ?? .null
        }
    }

    /// The bytes of the account file and its WAL, as hashes; a missing WAL counts as an
    /// empty one (opening a connection makes it).
    static func bytes(_ path: String) throws -> [String] {
        try [path, path + "-wal"].map { FileManager.default.fileExists(atPath: $0) ? try E2E.sha256sum($0) : "empty" }
            .map { $0 == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" ? "empty" : $0 }
    }

    /// A daemon with account `alice` created and filled with two rows.
    static func daemonWithAlice(_ dir: borrowing TestDirectory, arguments: [String] = [], environment: [String: String] = [:]) throws -> DaemonProcess {
        let path = dir.path
        let daemon = try E2E.spawning { try DaemonProcess(directory: path, arguments: arguments, environment: environment) }
        let client = try daemon.client()
        try #require(try client.callOne("switch alice").error == nil)
        try #require(try client.callOne("set user theme \"dark\"").error == nil, "accountd_prefs exists, for the refusal of writes to it")
        let inserted = try client.callOne(execute("alice", [("INSERT INTO user_info(user_name, age) VALUES (?, ?), (?, ?)", ["ann", 30, "ben", 40])]))
        try #require(inserted.error == nil, "\(inserted.parameters)")
        return daemon
    }
}
