import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Errors that only come up on a path a client rarely takes: `AccountBusy` once
/// `accounts.lockTimeoutSeconds` has passed, `NoActiveAccount`, and an `on-open.sql` that fails
/// after a migration has committed.
@Suite struct ErrorPathTests {
    // MARK: - AccountBusy

    /// A second step whose work grows with the rows of `item`: CPU-bound for a while on an account
    /// with rows, instant on the empty database the bundle check at load runs it on.
    static let spinningStep = """
        CREATE TABLE spin AS WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < (SELECT count(*) FROM item) * 2000)
        SELECT count(*) AS n FROM c;
        DROP TABLE spin;

        """

    /// While a migration holds bob, another operation on bob waits `accounts.lockTimeoutSeconds`
    /// (1 s here, not the default 30) and gets `AccountBusy` naming bob; other accounts are served.
    @Test func anOperationOnAnAccountInUseGetsAccountBusyAfterTheLockTimeout() throws {
        let dir = TestDirectory()
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: [Hostile.itemV1])
        let v2 = try BundleFixture.write(at: dir.sub("v2"), steps: [Hostile.itemV1, Self.spinningStep])
        // 8,000 rows: 16 million steps of the spinning CTE, seconds of CPU.
        try Hostile.makeItemAccount("bob", rows: 8000, dataRoot: dir.sub("data"), bundle: v1)
        let daemon = try E2E.daemon(directory: dir.path, bundle: v2, environment: ["ACCOUNTD_ACCOUNTS_LOCK_TIMEOUT_SECONDS": "1"])
        let (switcher, watcher) = try RestartTests.switchUntilMigrating(daemon)

        // Both at once, each on a connection of its own.
        let requests = [
            #"{"method":"io.accountd.Verify","parameters":{"account":"bob"}}"#,
            #"{"method":"io.accountd.Get","parameters":{"namespace":"user","key":"theme","account":"bob"}}"#,
        ]
        let asked = Date()
        let clients = try requests.map { request in
            let client = try daemon.client()
            try client.send(request + "\n")
            return client
        }
        for (request, client) in zip(requests, clients) {
            let reply = try client.readReply()
            let waited = Date().timeIntervalSince(asked)
            #expect(reply.error == .accountBusy, "\(request): \(reply.encoded())")
            #expect(reply.parameters["account"] == "bob", "\(reply.encoded())")
            #expect(reply.message?.contains("account bob is busy") == true, "\(reply.encoded())")
            #expect(waited >= 0.9 && waited < 10, "answered after \(waited) s; the lock timeout is 1 s")
        }
        // The migration was still running when the answers came: it was the timeout that spoke.
        #expect(try watcher.callOne("status bob").parameters["state"] == "migrating", "the migration ended before the timeout")
        // Another account does not wait for bob.
        #expect(try watcher.callOne("switch carol").parameters["action"] == "created")
        withExtendedLifetime(switcher) {}
    }

    // MARK: - NoActiveAccount

    /// With no active account, every preference call on a per-account namespace without
    /// `account` gets `NoActiveAccount`; device and memory namespaces, and calls naming an
    /// account, are served.
    @Test func perAccountCallsWithNoActiveAccountGetNoActiveAccount() throws {
        let dir = TestDirectory()
        try E2E.createOffline("alice", dataRoot: dir.sub("data"), bundle: Repository.sampleBundle)
        let daemon = try E2E.daemon(directory: dir.path)
        let client = try daemon.client()
        #expect(try client.callOne("status").parameters["active"] == .null)

        for request in [
            "get user theme", "keys user", #"set user theme "dark""#, "delete user theme",
            #"{"method":"io.accountd.Get","parameters":{"namespace":"default","key":"theme"}}"#,
            #"{"method":"io.accountd.Set","parameters":{"namespace":"user","key":"theme","value":1}}"#,
        ] {
            let reply = try client.callOne(request)
            #expect(reply.error == .noActiveAccount, "\(request): \(reply.encoded())")
            #expect(reply.message?.contains("no account is active") == true, "\(reply.encoded())")
        }
        // Scopes that need no account, and calls that name one, are served.
        #expect(try client.callOne(#"set switch beta true"#).error == nil)
        #expect(try client.callOne("get switch beta").parameters["value"] == true)
        #expect(try client.callOne(#"set memory theme "dark""#).error == nil)
        let named = try client.callOne(#"{"method":"io.accountd.Set","parameters":{"namespace":"user","key":"theme","value":"dark","account":"alice"}}"#)
        #expect(named.error == nil, "\(named.encoded())")

        // Once an account is active, the same call is served; the daemon holds no stale answer.
        #expect(try client.callOne("switch alice").error == nil)
        #expect(try client.callOne("get user theme").parameters["value"] == "dark")
    }

    // MARK: - on-open.sql after a committed migration

    /// bob migrates from 1 to 2 and the migration commits; then `on-open.sql` fails on bob's rows.
    /// The reply says the migration committed (not "rolled back"), and the file is at version 2.
    @Test func anOnOpenFailureAfterACommittedMigrationSaysTheMigrationCommitted() throws {
        let dir = TestDirectory()
        let itemTable = "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL);\n"
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: [itemTable])
        // Fine on the empty database of the bundle check; a UNIQUE failure on bob, who has row 1.
        let v2 = try BundleFixture.write(
            at: dir.sub("v2"), steps: [itemTable, "ALTER TABLE item ADD COLUMN note TEXT;\n"],
            onOpen: "INSERT INTO item(id, name) VALUES (1, 'from on-open');\n")
        let dataRoot = dir.sub("data")
        try E2E.createOffline("bob", dataRoot: dataRoot, bundle: v1)
        let path = dataRoot + "/accounts/bob.sqlite"
        try E2E.sql(path, "INSERT INTO item(id, name) VALUES (1, 'bob''s row');")

        let daemon = try E2E.daemon(directory: dir.path, bundle: v2)
        let client = try daemon.client()
        let reply = try client.callOne(#"{"method":"io.accountd.Switch","parameters":{"account":"bob"}}"#)
        #expect(reply.error == .migrationFailed, "\(reply.encoded())")
        let message = reply.message ?? ""
        #expect(message.contains("committed"), "\(message)")
        #expect(!message.contains("rolled back"), "\(message)")
        #expect(message.contains("on-open.sql line 1"), "\(message)")
        #expect(message.contains("version 2"), "\(message)")
        #expect(reply.parameters["fromVersion"] == 1 && reply.parameters["toVersion"] == 2, "\(reply.encoded())")
        // The file is at the new version with bob's row, and nothing from on-open.sql.
        #expect(try E2E.userVersion(path) == 2)
        #expect(try E2E.sql(path, "SELECT name FROM item;") == "bob's row")
        #expect(try client.callOne("status bob").parameters["state"] == "current")
        #expect(try client.callOne("status").parameters["active"] == .null, "an account whose on-open.sql failed became active")

        // The next switch opens it at version 2 (no second migration) and fails the same way.
        let again = try client.callOne("switch bob")
        #expect(again.error == .migrationFailed)
        #expect(again.message?.contains("the file was not changed") == true, "\(again.encoded())")
        #expect(try E2E.sql(path, "SELECT count(*) FROM accountd_migrations;") == "2")
    }
}
