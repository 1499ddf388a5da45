import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// The real `accountctl` against a real daemon: exit statuses, `--json`, and what each
/// command prints and does.
@Suite struct AccountctlTests {
    /// Removes `keys` from an object, for values that differ from run to run.
    static func without(_ keys: Set<String>, _ value: JSONValue) -> JSONValue {
        guard case .object(let pairs) = value else { return value }
        return .object(pairs.filter { !keys.contains($0.0) })
    }

    @Test func exitStatuses() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let socket = daemon.socket
        try E2E.makeTooNewAccount("future", dataRoot: daemon.dataRoot, bundle: Repository.sampleBundle, in: dir)

        let cases: [([String], Int32, String?)] = [
            (["status"], 0, nil),
            ([], 0, nil),
            (["ping"], 0, nil),
            (["switch", "alice"], 0, nil),
            (["status", "alice"], 0, nil),
            // Usage.
            (["switch"], 2, nil),
            (["switch", "a/b"], 2, nil),
            (["switch", ".."], 2, nil),
            (["switch", String(repeating: "x", count: 129)], 2, nil),
            (["status", "bad name"], 2, nil),
            (["export", "alice", "--format", "xml"], 2, nil),
            (["migrate"], 2, nil),
            (["frobnicate"], 2, nil),
            (["--no-such-option"], 2, nil),
            // The daemon's errors.
            (["switch", "future"], 1, "AccountTooNew"),
            (["restore", "alice"], 1, "SnapshotNotFound"),
            (["switch", "ghost", "--no-create"], 1, "AccountNotFound"),
            (["verify", "ghost"], 1, "AccountNotFound"),
        ]
        for (arguments, expected, error) in cases {
            let result = try E2E.accountctl(arguments, socket: socket)
            #expect(result.status == expected, "accountctl \(arguments): exit \(result.status), stderr \(result.stderr)")
            if let error { #expect(result.stderr.contains(error), "accountctl \(arguments): \(result.stderr)") }
            if expected == 2 { #expect(!result.stderr.isEmpty, "accountctl \(arguments) printed no usage message") }
        }
        // Unreachable: no such socket, or a socket with nobody listening.
        for path in [dir.sub("missing/accountd.sock"), dir.sub("none.yaml")] {
            let result = try E2E.accountctl(["status"], socket: path)
            #expect(result.status == 69, "\(path): exit \(result.status) \(result.stderr)")
            #expect(!result.stderr.isEmpty)
        }
        let viaEnvironment = try E2E.run(Binaries.accountctl, ["status"], environment: ["ACCOUNTD_SOCKET": socket])
        #expect(viaEnvironment.status == 0, "\(viaEnvironment.stderr)")
        // The refused switch changed nothing.
        #expect(try daemon.client().callOne("status").parameters["active"] == "alice")
        #expect(E2E.stop(daemon) == 0)
        #expect(try E2E.accountctl(["ping"], socket: socket).status == 69)
    }

    @Test func jsonPrintsTheReplyParametersOnePerLine() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try daemon.client()
        for account in ["alice", "bob"] { #expect(try client.callOne("switch \(account)").error == nil) }
        let socket = daemon.socket

        func json(_ arguments: [String]) throws -> [JSONValue] {
            let result = try E2E.accountctl(["--json"] + arguments, socket: socket)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(result.stdout.hasSuffix("\n"))
            let lines = try E2E.jsonLines(result.stdout)
            for line in lines {
                guard case .object = line else {
                    Issue.record("\(arguments): a line that is not an object: \(line.serialized())")
                    continue
                }
            }
            return lines
        }
        #expect(try json(["status"]) == [try client.callOne("status").parameters])
        #expect(try json(["status", "alice"]) == [try client.callOne("status alice").parameters])
        #expect(try json(["ping"]) == [[:]])
        #expect(try json(["list"]) == (try client.call("list").map(\.parameters)))
        #expect(try json(["list", "--details"]) == (try client.call("list details").map(\.parameters)))
        #expect(try json(["verify", "alice"]) == [try client.callOne("verify alice").parameters])
        #expect(try json(["snapshots", "alice"]) == [try client.callOne("snapshots alice").parameters])
        #expect(
            try json(["info"]).map { Self.without(["uptimeSeconds"], $0) } == [Self.without(["uptimeSeconds"], try client.callOne("info").parameters)])
        // The option may also come after the command.
        let after = try E2E.accountctl(["status", "--json"], socket: socket)
        #expect(try E2E.jsonLines(after.stdout) == [try client.callOne("status").parameters])

        let switched = try json(["switch", "alice"])
        #expect(switched.count == 1)
        let expected = try client.callOne("switch alice").parameters
        #expect(switched.first?["previous"] == "bob")
        #expect(expected["previous"] == "alice")
        #expect(switched.map { Self.without(["durationMs", "previous"], $0) } == [Self.without(["durationMs", "previous"], expected)])
        #expect(switched.first?.objectValue?.map(\.0) == expected.objectValue?.map(\.0))

        let migrate = try json(["migrate", "--all"])
        #expect(migrate.count == 3)
        #expect(migrate.last == ["count": 2, "migrated": 0, "current": 2, "failed": 0, "skipped": 0])
        #expect(migrate.first?["of"] == 2, "every streamed result says how many accounts there are")

        // Export: every reply, one per line; the rows equal the raw protocol's.
        let exported = try json(["export", "alice"])
        let raw = try client.call(#"{"method":"io.accountd.Export","parameters":{"account":"alice","format":"jsonl"},"more":true}"#).map(\.parameters)
        #expect(exported.count == raw.count)
        #expect(exported.dropLast() == raw.dropLast())
        #expect(exported.last?["rows"] == raw.last?["rows"])
    }

    @Test func humanOutputAndFiles() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        let socket = daemon.socket

        let created = try E2E.accountctl(["switch", "alice"], socket: socket)
        #expect(created.status == 0)
        #expect(created.stdout.lowercased().contains("created"), "\(created.stdout)")
        #expect(created.stdout.contains("alice"))
        let opened = try E2E.accountctl(["switch", "bob@example.com"], socket: socket)
        #expect(opened.stdout.lowercased().contains("created"))
        let again = try E2E.accountctl(["switch", "alice"], socket: socket)
        #expect(again.status == 0)
        #expect(again.stdout.contains("Switched to alice"), "\(again.stdout)")
        #expect(!again.stdout.lowercased().contains("created"))
        #expect(!again.stdout.lowercased().contains("migrated"))

        let list = try E2E.accountctl(["list"], socket: socket)
        #expect(list.status == 0)
        let rows = list.stdout.split(separator: "\n")
        #expect(rows.first?.contains("ACCOUNT") == true, "\(list.stdout)")
        #expect(rows.count == 3)
        #expect(rows.dropFirst().map { $0.split(separator: " ").first.map(String.init) ?? "" } == ["alice", "bob@example.com"])

        let status = try E2E.accountctl(["status"], socket: socket)
        #expect(status.stdout.contains("alice"))
        #expect(status.stdout.contains("ready"))

        let verify = try E2E.accountctl(["verify", "alice"], socket: socket)
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        #expect(verify.stdout.contains("yes"))

        try E2E.sql(daemon.accountPath("alice"), "INSERT INTO user_info(user_id, user_name, age, sex) VALUES (1, 'Ann', 30, 'f'), (2, 'Bo', NULL, NULL);")
        let file = dir.sub("out/alice.jsonl")
        try FileManager.default.createDirectory(atPath: dir.sub("out"), withIntermediateDirectories: true)
        let export = try E2E.accountctl(["export", "alice", "-o", file], socket: socket)
        #expect(export.status == 0, "\(export.stderr)")
        let lines = try E2E.jsonLines(String(contentsOfFile: file, encoding: .utf8))
        #expect(lines.filter { $0["table"] == "user_info" }.map { $0["row"] ?? .null } == [
            ["user_id": 1, "user_name": "Ann", "age": 30, "sex": "f"], ["user_id": 2, "user_name": "Bo", "age": nil, "sex": nil],
        ])
        #expect(lines.allSatisfy { $0["table"] != nil && $0["row"] != nil })
        // Nothing but the file was left in the folder.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.sub("out")) == ["alice.jsonl"])

        let sql = dir.sub("out/alice.sql")
        #expect(try E2E.accountctl(["export", "alice", "--format", "sql", "--output", sql], socket: socket).status == 0)
        #expect(try E2E.sql(dir.sub("rebuilt.db"), String(contentsOfFile: sql, encoding: .utf8) + "SELECT user_name FROM user_info ORDER BY user_id;") == "Ann\nBo")

        let info = try E2E.accountctl(["info"], socket: socket)
        #expect(info.stdout.contains("accountd"))
        #expect(info.stdout.contains(daemon.dataRoot))
        let ping = try E2E.accountctl(["ping"], socket: socket)
        #expect(ping.status == 0)
        #expect(!ping.stdout.isEmpty)
    }

    @Test func migrateSnapshotsAndRestore() throws {
        let dir = TestDirectory()
        let v2 = try BundleFixture.write(at: dir.sub("v2"), steps: Array(E2E.sampleSteps.prefix(2)))
        let v3 = try BundleFixture.write(at: dir.sub("v3"), steps: E2E.sampleSteps)
        let dataRoot = dir.sub("data")
        for account in ["alice", "bob"] { try E2E.createOffline(account, dataRoot: dataRoot, bundle: v2) }
        let alice = dataRoot + "/accounts/alice.sqlite"
        try E2E.sql(alice, "INSERT INTO user_info(user_id, user_name, age) VALUES (1, 'Ann', 30), (2, 'Bo', 41);")
        let oldRows = try TableDump.dumpFile(path: alice)
        try E2E.createOffline("carol", dataRoot: dataRoot, bundle: v3)

        let daemon = try E2E.daemon(directory: dir.path, bundle: v3)
        let socket = daemon.socket
        #expect(try E2E.accountctl(["snapshots", "alice"], socket: socket).stdout.contains("No snapshots"))

        // Named accounts are reported one per line; --all reports only failures.
        let migrate = try E2E.accountctl(["migrate", "alice", "bob", "carol"], socket: socket)
        #expect(migrate.status == 0, "\(migrate.stderr)")
        #expect(migrate.stdout.contains("3 accounts: 2 migrated, 1 current, 0 failed"), "\(migrate.stdout)")
        #expect(migrate.stdout.split(separator: "\n").contains { $0.hasPrefix("migrated") && $0.contains("alice") && $0.contains("2 -> 3") }, "\(migrate.stdout)")
        #expect(migrate.stdout.split(separator: "\n").contains { $0.hasPrefix("current") && $0.contains("carol") }, "\(migrate.stdout)")
        #expect(try E2E.userVersion(alice) == 3)
        let again = try E2E.accountctl(["migrate", "--all"], socket: socket)
        #expect(again.status == 0 && again.stdout == "3 accounts: 0 migrated, 3 current, 0 failed\n", "\(again.stdout)")
        // Migrate switches nothing.
        #expect(try daemon.client().callOne("status").parameters["active"] == .null)

        let snapshots = try E2E.accountctl(["--json", "snapshots", "alice"], socket: socket)
        let listed = try #require(try E2E.jsonLines(snapshots.stdout).first?["snapshots"]?.arrayValue)
        #expect(listed.count == 1)
        let snapshot = try #require(listed.first)
        #expect(snapshot["version"] == 2)
        let name = try #require(snapshot["snapshot"]?.stringValue)
        let human = try E2E.accountctl(["snapshots", "alice"], socket: socket)
        #expect(human.stdout.contains(name))
        #expect(human.stdout.contains("VERSION"))

        // Change alice at version 3, then restore the version-2 copy.
        try E2E.sql(alice, "DELETE FROM user_info WHERE user_id = 1; INSERT INTO user_info(user_id, user_name, sex) VALUES (3, 'Cy', 'm'); INSERT INTO app_data VALUES ('k', 'v');")
        let restore = try E2E.accountctl(["restore", "alice"], socket: socket)
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect(restore.stdout.contains(name), "\(restore.stdout)")
        #expect(try E2E.userVersion(alice) == 2)
        #expect(try TableDump.dumpFile(path: alice) == oldRows)
        #expect(try E2E.sql(alice, "PRAGMA integrity_check;") == "ok")
        #expect(Files.mode(alice) == 0o600)
        // The replaced file was kept as a snapshot first.
        let after = try E2E.jsonLines(try E2E.accountctl(["--json", "snapshots", "alice"], socket: socket).stdout).first?["snapshots"]?.arrayValue ?? []
        #expect(after.count == 2)
        #expect(after.contains { $0["version"] == 3 })
        let status = try E2E.accountctl(["--json", "status", "alice"], socket: socket)
        #expect(try E2E.jsonLines(status.stdout).first?["state"] == "outdated")

        // Switching brings it forward again.
        let switched = try E2E.accountctl(["switch", "alice"], socket: socket)
        #expect(switched.stdout.contains("migrated from version 2 to 3"), "\(switched.stdout)")
    }
}
