import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A pull whose copy is refused (bound to another account, not an accountd file, too new)
/// says what is true (hostile33c #9): the pulled copy was refused and removed, nothing here
/// changed, and what to do; not the words for an account file in place ("left untouched",
/// "restore a snapshot"), which has no file and no snapshot here.
@Suite(.enabled(if: TestLitestream.path != nil, Comment(rawValue: TestLitestream.skipReason)))
struct PullRefusalTests {
    @Test func aRefusedCopySaysItWasRemovedAndNothingHereChanged() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [ReplicationTests.createItems], names: ["create_items"])
        let replica = "file://" + dir.sub("replica-x")
        // Host X's replica holds carol.sqlite (account rich's file), plain.sqlite (no accountd
        // file) and newer.sqlite (account newer at version 99), planted beside its accounts.
        let x = try E2E.replicatingDaemon(directory: dir.sub("host-x"), bundle: bundle, replica: replica, runDirectory: dir.sub("run-x"))
        let litestream = try LitestreamProcess(config: dir.sub("run-x/litestream.yml"), log: dir.sub("litestream-x"))
        #expect(try x.client().callOne("switch rich").parameters["action"] == "created")
        try E2E.sql(x.accountPath("rich"), ".backup '\(x.accountPath("carol"))'")
        try E2E.sql(x.accountPath("rich"), ".backup '\(x.accountPath("newer"))'")
        try E2E.sql(
            x.accountPath("newer"),
            "UPDATE accountd_meta SET value = 'newer' WHERE key = 'account'; INSERT OR REPLACE INTO accountd_meta(key, value) VALUES ('last_compatible_version', 99); PRAGMA user_version = 99;")
        try E2E.sql(x.accountPath("plain"), "CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        for account in ["carol", "newer", "plain"] {
            try E2E.sql(x.accountPath(account), "PRAGMA journal_mode = WAL;")
            try litestream.syncAndWait(x.accountPath(account))
        }

        let b = try E2E.replicatingDaemon(
            directory: dir.sub("host-b"), bundle: bundle, replica: "file://" + dir.sub("replica-b"), runDirectory: dir.sub("run-b"))
        for (account, error, reason) in [
            ("carol", "AccountCorrupt", "belongs to account \"rich\""), ("plain", "AccountCorrupt", "not an accountd account file"),
            ("newer", "AccountTooNew", "is at version 99"),
        ] {
            let pulled = try E2E.accountctl(["pull", account, "--replica", replica], socket: b.socket)
            let said = pulled.stderr
            #expect(pulled.status == 1 && said.contains(error) && said.contains(reason), "\(account): \(said)")
            #expect(said.contains("the copy of account \(account) pulled from \(replica)/\(account).sqlite was refused"), "\(said)")
            #expect(said.contains("The pulled copy was removed and nothing here changed"), "\(said)")
            #expect(!said.contains("left untouched") && !said.contains("Restore a snapshot") && !said.contains(".pulling"), "\(said)")
            let left = try FileManager.default.contentsOfDirectory(atPath: b.dataRoot + "/accounts").filter { $0.contains(account) }
            #expect(left.isEmpty, "\(account): \(left)")
        }
        // The offline tool says the same.
        b.stop()
        let offline = try E2E.pullOffline("carol", replica: replica, dataRoot: b.dataRoot)
        #expect(offline.status == 1 && offline.stderr.contains("was refused") && !offline.stderr.contains("left untouched"), "\(offline.stderr)")
    }
}
