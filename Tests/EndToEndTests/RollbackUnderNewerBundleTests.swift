import AccountdProtocol
import AccountdTestSupport
import Foundation
import GRDB
import Testing

/// hostile34e G5: a reload that put the newer bundle back in force while `migrate --all
/// --rollback-to N` ran did not stop it: it went on restoring accounts to N, each of which
/// the bundle in force would migrate again at its next open, and exited 0. It stops now,
/// as a rollout stops at a withdrawn bundle: the accounts not begun are skipped, exit 1.
@Suite struct RollbackUnderNewerBundleTests {
    @Test func aReloadToANewerBundleStopsTheRollback() throws {
        let dir = TestDirectory()
        let names = (0..<40).map { String(format: "r%02d", $0) }
        let (daemon, v1) = try ConcurrentRollbackTests.released(names, rows: 20000, in: dir, concurrency: 1)
        defer { _ = E2E.stop(daemon) }

        let socket = daemon.socket
        let output = E2E.Locked<(status: Int32, stdout: String, stderr: String)?>(nil)
        let rollback = Thread { output.withLock { $0 = try? E2E.accountctl(["migrate", "--all", "--rollback-to", "1"], socket: socket) } }
        rollback.start()
        // Once the first account is back at 1, the release is put in force again.
        #expect(waitUntil(timeout: 60, interval: 0.01) { (try? E2E.userVersion(daemon.accountPath(names[0]))) == 1 })
        try FileManager.default.copyItem(atPath: dir.sub("v2") + "/migrations/0002_step2.sql", toPath: v1 + "/migrations/0002_step2.sql")
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(waitUntil(timeout: 120, interval: 0.1) { output.current != nil }, "the rollback did not end")
        let run = try #require(output.current)
        #expect(run.status == 1, "\(run.stdout) \(run.stderr)")
        #expect(run.stdout.contains("a reload put bundle version 2 in force"), "\(run.stdout)")
        #expect(run.stdout.contains("skipped"), "\(run.stdout)")
        let atOne = try names.filter { try E2E.userVersion(daemon.accountPath($0)) == 1 }
        #expect(atOne.count < names.count, "\(atOne.count) of \(names.count) accounts were rolled back after the reload: \(run.stdout)")
    }

    /// hostile34e G2: a rollback of an account whose file could not be read for the disk (or
    /// another process's lock) said `AccountCorrupt`, "version cannot be read", of a sound
    /// file. It says what is in the way, and nothing changes.
    @Test func anAccountThatCannotBeReadNowIsNotCalledCorrupt() throws {
        let dir = TestDirectory()
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: [Hostile.itemV1])
        let v2 = try BundleFixture.write(at: dir.sub("v2"), steps: [Hostile.itemV1, Hostile.itemV2])
        try Hostile.makeItemAccount("held", rows: 100, dataRoot: dir.sub("data"), bundle: v1)
        var daemon = try E2E.daemon(directory: dir.path, bundle: v2)
        #expect(try E2E.accountctl(["migrate", "--all"], socket: daemon.socket).status == 0)
        _ = E2E.stop(daemon)
        daemon = try E2E.daemon(directory: dir.path, bundle: v1, environment: ["ACCOUNTD_ACCOUNTS_LOCK_TIMEOUT_SECONDS": "1"])
        defer { _ = E2E.stop(daemon) }

        var config = Configuration()
        config.allowsUnsafeTransactions = true
        let holder = try DatabaseQueue(path: daemon.accountPath("held"), configuration: config)
        try holder.inDatabase { db in
            try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
            try db.execute(sql: "BEGIN EXCLUSIVE")
            try db.execute(sql: "UPDATE item SET n = n WHERE id = 1")
        }
        let inode = try FileManager.default.attributesOfItem(atPath: daemon.accountPath("held"))[.systemFileNumber] as? Int
        let run = try E2E.accountctl(["migrate", "--all", "--rollback-to", "1"], socket: daemon.socket)
        // A restore by hand is refused too: the file is never replaced under the process holding it.
        let restore = try E2E.accountctl(["restore", "held"], socket: daemon.socket)
        #expect(restore.status != 0 && restore.stderr.contains("AccountBusy"), "\(restore.stdout) \(restore.stderr)")
        #expect(try FileManager.default.attributesOfItem(atPath: daemon.accountPath("held"))[.systemFileNumber] as? Int == inode)
        try holder.close()
        #expect(run.status != 0)
        #expect(!run.stdout.contains("AccountCorrupt") && !run.stderr.contains("AccountCorrupt"), "\(run.stdout) \(run.stderr)")
        #expect(run.stdout.contains("cannot be read now"), "\(run.stdout) \(run.stderr)")
        #expect(try E2E.userVersion(daemon.accountPath("held")) == 2)
    }
}
