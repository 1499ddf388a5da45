import AccountdProtocol
import AccountdTestSupport
import Foundation
import GRDB
import Testing

/// An account another process holds locked, once the daemon has opened it before (issue 34,
/// hostile34b N1): the daemon remembered the file, and a lock changes no stamp. A switch to it
/// said `ready` in under a millisecond, then Get and Set failed with `InternalError` after
/// twice the lock timeout (no `account=` in the log line), Query and Execute with a raw
/// `SQLError: database is locked` (a Query at once). Now every one of them waits
/// `accounts.lockTimeoutSeconds` at most and answers `AccountBusy`, saying how to find the
/// other process, as `Status ACCOUNT` does; the previous account stays active.
@Suite struct LockedAccountCallsTests {
    static let lockTimeout = 1.0

    /// Holds `path` as `sqlite3` with `PRAGMA locking_mode=EXCLUSIVE` does, from this test's
    /// process (another process than the daemon's), and returns once the kernel lists the lock.
    static func hold(_ path: String) throws -> DatabaseQueue {
        let holder = try LockedAccountTests.holdExclusively(path)
        let inode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? UInt64)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let locks = (try? String(contentsOfFile: "/proc/locks", encoding: .utf8)) ?? ""
            if locks.contains(":\(inode) ") { return holder }
            usleep(20_000)
        }
        Issue.record("the lock on \(path) never showed in /proc/locks")
        return holder
    }

    /// Expects `reply` to be `AccountBusy` naming the other process, within the lock timeout.
    static func expectBusy(_ reply: Reply, seconds: TimeInterval, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(reply.error == .accountBusy, "\(what): \(reply.encoded())", sourceLocation: sourceLocation)
        #expect(reply.message?.contains("another process holds account x1") == true, "\(what): \(reply.message ?? "")", sourceLocation: sourceLocation)
        #expect(reply.message?.contains("fuser") == true, "\(what): \(reply.message ?? "")", sourceLocation: sourceLocation)
        #expect(seconds < lockTimeout + 2, "\(what) answered after \(seconds) s, with lockTimeoutSeconds \(lockTimeout)", sourceLocation: sourceLocation)
    }

    @Test func aSwitchToAHeldAccountItOpenedBeforeIsRefusedAndKeepsThePreviousOne() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path, environment: ["ACCOUNTD_ACCOUNTS_LOCK_TIMEOUT_SECONDS": "\(Self.lockTimeout)"])
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 30)
        // Opened (not only created), so that the daemon remembers the file's facts.
        for account in ["x1", "alice", "x1", "alice"] { #expect(try client.callOne("switch \(account)").error == nil) }
        let holder = try Self.hold(daemon.accountPath("x1"))
        defer { try? holder.close() }

        let (reply, seconds) = try LockedAccountTests.timed { try client.callOne("switch x1") }
        Self.expectBusy(reply, seconds: seconds, "switch x1")
        #expect(seconds >= Self.lockTimeout * 0.9, "a switch to a held account gave up after \(seconds) s, before lockTimeoutSeconds")
        let status = try client.callOne("status")
        #expect(status.parameters["active"] == "alice" && status.parameters["state"] == "ready", "\(status.encoded())")

        try holder.close()
        #expect(try client.callOne("switch x1").error == nil, "the same switch succeeds once the other process lets go")
    }

    @Test func callsOnAHeldAccountAnswerAccountBusyNamingTheAccount() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path, environment: ["ACCOUNTD_ACCOUNTS_LOCK_TIMEOUT_SECONDS": "\(Self.lockTimeout)"])
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 30)
        let setX1 = #"{"method":"io.accountd.Set","parameters":{"namespace":"user","key":"theme","value":"dark","account":"x1"}}"#
        let query = #"{"method":"io.accountd.Query","parameters":{"sql":"SELECT count(*) FROM user_info","account":"x1"}}"#
        let execute = #"{"method":"io.accountd.Execute","parameters":{"statements":[{"sql":"DELETE FROM user_info"}],"account":"x1"}}"#
        // x1 opened and used, then opened again (which closes its connections: while the daemon
        // has the file open, no other process can take its exclusive lock) and left.
        for account in ["x1", "alice", "x1"] { #expect(try client.callOne("switch \(account)").error == nil) }
        for request in [setX1, query, execute] { #expect(try client.callOne(request).error == nil, "\(request)") }
        for account in ["alice", "x1", "alice"] { #expect(try client.callOne("switch \(account)").error == nil) }
        let holder = try Self.hold(daemon.accountPath("x1"))
        defer { try? holder.close() }

        let (read, readSeconds) = try LockedAccountTests.timed { try client.callOne(query) }
        Self.expectBusy(read, seconds: readSeconds, "Query")
        let (written, writeSeconds) = try LockedAccountTests.timed { try client.callOne(execute) }
        Self.expectBusy(written, seconds: writeSeconds, "Execute")
        // Get and Set open the table again (the switch away closed it).
        let (got, getSeconds) = try LockedAccountTests.timed { try client.callOne("get user theme x1") }
        Self.expectBusy(got, seconds: getSeconds, "Get")
        let (set, setSeconds) = try LockedAccountTests.timed { try client.callOne(setX1) }
        Self.expectBusy(set, seconds: setSeconds, "Set")

        try holder.close()
        #expect(try client.callOne("get user theme x1").parameters["value"] == "dark")
        #expect(try client.callOne(query).error == nil)
        // Every failure's log line names the account.
        let failures = daemon.log.split(separator: "\n").filter { $0.contains(" failed") || $0.contains("internal error") }
        #expect(failures.count >= 4, "\(daemon.log.suffix(3000))")
        #expect(failures.allSatisfy { $0.contains("account=x1") }, "\(failures)")
    }

    /// A Set on an account whose preference table is open but not written since it was (its
    /// values read, its file closed again): the commit, not the open, meets the lock.
    @Test func aSetCommittingToAHeldAccountAnswersAccountBusy() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path, environment: ["ACCOUNTD_ACCOUNTS_LOCK_TIMEOUT_SECONDS": "\(Self.lockTimeout)"])
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 30)
        #expect(try client.callOne("switch x1").error == nil)
        let set = #"{"method":"io.accountd.Set","parameters":{"namespace":"user","key":"theme","value":"dark"}}"#
        #expect(try client.callOne(set).error == nil)
        #expect(try client.callOne("switch alice").error == nil)
        #expect(try client.callOne("switch x1").error == nil)
        #expect(try client.callOne("get user theme").parameters["value"] == "dark")
        let holder = try Self.hold(daemon.accountPath("x1"))
        defer { try? holder.close() }

        let (reply, seconds) = try LockedAccountTests.timed { try client.callOne(set) }
        Self.expectBusy(reply, seconds: seconds, "Set on the open table")
        #expect(try client.callOne("get user theme").parameters["value"] == "dark")
        let lines = daemon.log.split(separator: "\n").filter { $0.contains("operation=Set") }
        #expect(!lines.isEmpty && lines.allSatisfy { $0.contains("account=x1") }, "\(daemon.log.suffix(2000))")
    }

    /// Verify, Plan, Export and Snapshot wait `accounts.lockTimeoutSeconds` too: Plan and
    /// Export waited SQLite's fixed 10 s, and said nothing of the setting.
    @Test func maintenanceOfAHeldAccountGivesUpAfterTheLockTimeout() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path, environment: ["ACCOUNTD_ACCOUNTS_LOCK_TIMEOUT_SECONDS": "\(Self.lockTimeout)"])
        defer { _ = E2E.stop(daemon) }
        let client = try Hostile.client(daemon.socket, timeout: 30)
        for account in ["x1", "alice"] { #expect(try client.callOne("switch \(account)").error == nil) }
        let holder = try Self.hold(daemon.accountPath("x1"))
        defer { try? holder.close() }

        let requests = [
            #"{"method":"io.accountd.Verify","parameters":{"account":"x1"}}"#,
            #"{"method":"io.accountd.Plan","parameters":{"account":"x1"}}"#,
            #"{"method":"io.accountd.Export","parameters":{"account":"x1","format":"jsonl"},"more":true}"#,
            #"{"method":"io.accountd.Snapshot","parameters":{"account":"x1"}}"#,
        ]
        for request in requests {
            let (reply, seconds) = try LockedAccountTests.timed { try client.callOne(request) }
            Self.expectBusy(reply, seconds: seconds, request)
        }
    }
}
