import AccountdProtocol
import AccountdTestSupport
import Foundation
import GRDB
import Testing

/// An account file another process holds locked (issue 29's second hostile round, findings
/// 1 and 2): `Status` and `List` answer at once with the truth (`unavailable`, the header's
/// version, why), a wait for the file gives up after `accounts.lockTimeoutSeconds`, and
/// start-up's retries on a held saved account hold up no switch to another one.
@Suite struct LockedAccountTests {
    /// Holds `path` locked as `sqlite3` with `PRAGMA locking_mode=EXCLUSIVE` does: after one
    /// write transaction, the connection keeps the file's exclusive lock until it closes, and
    /// no other process can read it. Close the returned queue to let go.
    static func holdExclusively(_ path: String) throws -> DatabaseQueue {
        let holder = try DatabaseQueue(path: path)
        try holder.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
            try db.execute(sql: "BEGIN IMMEDIATE")
            try db.execute(sql: "COMMIT")
        }
        return holder
    }

    /// Seconds `body` took, with what it returned.
    static func timed<T>(_ body: () throws -> T) rethrows -> (T, TimeInterval) {
        let started = Date()
        let result = try body()
        return (result, Date().timeIntervalSince(started))
    }

    /// Finding 1: `status x3` and `list --details` of a file another process holds locked
    /// waited SQLite's 10 s busy timeout, then said `migrating` with no version, though no
    /// migration ran. Now: at once, `unavailable`, the version from the file's header, and a
    /// problem that says another process holds it.
    @Test func statusOfAnAccountAnotherProcessHoldsIsUnavailableAtOnce() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 30)
        #expect(try client.callOne("switch x3").error == nil)
        #expect(try client.callOne("switch alice").error == nil)
        let version = try #require(try E2E.userVersion(daemon.accountPath("x3")))
        let holder = try Self.holdExclusively(daemon.accountPath("x3"))
        defer { try? holder.close() }

        let (status, seconds) = try Self.timed { try client.callOne("status x3") }
        #expect(seconds < 3, "status waited \(seconds) s for a lock")
        #expect(status.parameters["state"] == "unavailable", "\(status.encoded())")
        #expect(status.parameters["version"] == JSONValue(version), "\(status.encoded())")
        #expect(status.parameters["problem"]?.stringValue?.contains("another process holds") == true, "\(status.encoded())")

        let (listed, listSeconds) = try Self.timed { try client.call("list details") }
        #expect(listSeconds < 3, "list details waited \(listSeconds) s for a lock")
        let x3 = listed.first { $0.parameters["account"] == "x3" }
        #expect(x3?.parameters["state"] == "unavailable", "\(listed.map { $0.encoded() })")
        #expect(x3?.parameters["version"] == JSONValue(version), "\(listed.map { $0.encoded() })")

        try holder.close()
        #expect(try client.callOne("status x3").parameters["state"] == "current")
    }

    /// Finding 2: a switch to a file another process holds answered `AccountBusy` after
    /// SQLite's fixed 10 s, whatever `accounts.lockTimeoutSeconds` said. Now it follows it.
    @Test func aSwitchToAHeldAccountGivesUpAfterLockTimeoutSeconds() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path, environment: ["ACCOUNTD_ACCOUNTS_LOCK_TIMEOUT_SECONDS": "1"])
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 30)
        #expect(try client.callOne("switch x1").error == nil)
        #expect(try client.callOne("switch alice").error == nil)
        let holder = try Self.holdExclusively(daemon.accountPath("x1"))
        defer { try? holder.close() }

        let (reply, seconds) = try Self.timed { try client.callOne("switch x1") }
        #expect(reply.error == .accountBusy, "\(reply.encoded())")
        #expect(seconds >= 0.9 && seconds < 4, "AccountBusy came after \(seconds) s, with lockTimeoutSeconds 1")
        #expect(try client.callOne("status").parameters["active"] == "alice")
    }

    /// Finding 2: at start-up, while another process holds the saved active account x1 and
    /// the daemon keeps trying to open it, a switch to another account answers at once.
    @Test func aHeldSavedAccountHoldsUpNoSwitchToAnother() throws {
        let dir = TestDirectory()
        let first = try E2E.daemon(directory: dir.path)
        #expect(try first.client().callOne("switch x2").error == nil)
        #expect(try first.client().callOne("switch x1").error == nil)
        #expect(E2E.stop(first) == 0)
        let holder = try Self.holdExclusively(first.accountPath("x1"))
        defer { try? holder.close() }

        let daemon = try E2E.spawning { try DaemonProcess(directory: dir.path, waitForSavedAccount: false) }
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 60)
        #expect(try client.callOne("status").parameters["state"] == "opening")
        // Into the background open's attempt, then a switch to another account.
        usleep(500_000)
        for _ in 0..<2 {
            let (reply, seconds) = try Self.timed { try client.callOne("switch x2") }
            #expect(reply.error == nil, "\(reply.encoded())")
            #expect(seconds < 2, "switch x2 took \(seconds) s while x1 was held: \(daemon.log.suffix(2000))")
        }
        let status = try client.callOne("status")
        #expect(status.parameters["active"] == "x2", "\(status.encoded())")
        #expect(status.parameters["state"] == "ready", "\(status.encoded())")
    }
}
