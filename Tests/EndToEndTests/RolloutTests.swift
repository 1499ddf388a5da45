import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Staged rollouts of `Migrate` against the real daemon: a canary, `maxFailures`, the
/// accounts not begun reported `skipped` and left untouched, and a stopped rollout
/// resumed by sending it again. Accounts are made to fail by their rows: version 2
/// adds a unique index, which an account holding a duplicate cannot take.
@Suite struct RolloutTests {
    static let steps = [
        "CREATE TABLE item (id INTEGER PRIMARY KEY, code INTEGER);",
        "CREATE UNIQUE INDEX item_code ON item(code);",
    ]
    static let names = (0..<10).map { "a\($0)" }

    /// Ten accounts at version 1, `broken` of them holding a duplicate code, and a daemon
    /// serving version 2 that migrates one account at a time (so the order is the names').
    static func fleet(_ dir: borrowing TestDirectory, broken: Set<String>) throws -> DaemonProcess {
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: Array(steps.prefix(1)))
        let v2 = try BundleFixture.write(at: dir.sub("v2"), steps: steps)
        for name in names {
            try E2E.createOffline(name, dataRoot: dir.sub("data"), bundle: v1)
            let rows = broken.contains(name) ? "(1, 7), (2, 7)" : "(1, 7), (2, 8)"
            _ = try E2E.sqlite3(dir.sub("data") + "/accounts/\(name).sqlite", "INSERT INTO item VALUES \(rows);")
        }
        return try E2E.daemon(directory: dir.path, bundle: v2, environment: ["ACCOUNTD_ACCOUNTS_MIGRATE_CONCURRENCY": "1"])
    }

    /// Sends a streamed Migrate of every account with `rollout` (JSON members), and
    /// returns each account's result by name and the summary.
    static func migrate(_ daemon: DaemonProcess, _ rollout: String) throws -> (results: [String: String], summary: Reply) {
        let parameters = rollout.isEmpty ? #"{"all":true}"# : #"{"all":true,"# + rollout + "}"
        let replies = try daemon.client().call(#"{"method":"io.accountd.Migrate","parameters":"# + parameters + #","more":true}"#)
        var results: [String: String] = [:]
        for reply in replies.dropLast() {
            #expect(reply.parameters["of"] == 10, "\(reply.encoded())")
            results[reply.parameters["account"]!.stringValue!] = reply.parameters["result"]!.stringValue!
        }
        return (results, try #require(replies.last))
    }

    static func version(_ daemon: DaemonProcess, _ name: String) throws -> String {
        try E2E.sql(daemon.accountPath(name), "PRAGMA user_version;")
    }

    @Test func aFailedCanaryStopsTheRestAndARerunResumes() throws {
        let dir = TestDirectory()
        let daemon = try Self.fleet(dir, broken: ["a2", "a5"])
        defer { _ = E2E.stop(daemon) }

        // The canary (a0, a1, a2) has a failure: nothing else begins.
        let first = try Self.migrate(daemon, #""canary":3"#)
        #expect(first.results["a0"] == "migrated" && first.results["a1"] == "migrated" && first.results["a2"] == "failed", "\(first.results)")
        #expect(Self.names.dropFirst(3).allSatisfy { first.results[$0] == "skipped" }, "\(first.results)")
        #expect(first.summary.parameters["stopped"] == "canary" && first.summary.parameters["skipped"] == 7 && first.summary.parameters["failed"] == 1)
        for name in Self.names.dropFirst(3) { #expect(try Self.version(daemon, name) == "1", "\(name) was skipped and must be untouched") }

        // a2 repaired: the same rollout again passes the canary (a0, a1 current) and goes on,
        // and stops at the first failure after it with maxFailures 1.
        _ = try E2E.sqlite3(daemon.accountPath("a2"), "UPDATE item SET code = 9 WHERE id = 2;")
        let second = try Self.migrate(daemon, #""canary":3,"maxFailures":1"#)
        #expect(second.results["a0"] == "current" && second.results["a1"] == "current" && second.results["a2"] == "migrated")
        #expect(second.results["a3"] == "migrated" && second.results["a4"] == "migrated" && second.results["a5"] == "failed", "\(second.results)")
        #expect(["a6", "a7", "a8", "a9"].allSatisfy { second.results[$0] == "skipped" }, "\(second.results)")
        #expect(second.summary.parameters["stopped"] == "maxFailures" && second.summary.parameters["skipped"] == 4)
        #expect(try Self.version(daemon, "a6") == "1" && Self.version(daemon, "a5") == "1")

        // Everything repaired: a plain Migrate finishes the rest.
        _ = try E2E.sqlite3(daemon.accountPath("a5"), "UPDATE item SET code = 9 WHERE id = 2;")
        let third = try Self.migrate(daemon, "")
        #expect(third.summary.parameters["failed"] == 0 && third.summary.parameters["skipped"] == 0 && third.summary.parameters["stopped"] == nil)
        #expect(third.summary.parameters["migrated"] == 5 && third.summary.parameters["current"] == 5, "\(third.summary.encoded())")
        for name in Self.names { #expect(try Self.version(daemon, name) == "2", "\(name)") }
    }

    @Test func withoutARolloutAFailureStopsNothing() throws {
        let dir = TestDirectory()
        let daemon = try Self.fleet(dir, broken: ["a5"])
        defer { _ = E2E.stop(daemon) }
        let run = try Self.migrate(daemon, "")
        #expect(run.results["a5"] == "failed" && run.summary.parameters["migrated"] == 9 && run.summary.parameters["skipped"] == 0)
        // A passing canary lets everything through, and one failure is under maxFailures 2.
        let rerun = try Self.migrate(daemon, #""canary":2,"maxFailures":2"#)
        #expect(rerun.results["a5"] == "failed" && rerun.summary.parameters["current"] == 9 && rerun.summary.parameters["stopped"] == nil, "\(rerun.summary.encoded())")
    }

    @Test func accountctlShowsTheStopAndTheFailuresByError() throws {
        let dir = TestDirectory()
        let daemon = try Self.fleet(dir, broken: ["a1", "a3"])
        defer { _ = E2E.stop(daemon) }
        let run = try E2E.accountctl(["migrate", "--all", "--canary", "2", "--max-failures", "5"], socket: daemon.socket)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("10 accounts: 1 migrated, 0 current, 1 failed, 8 skipped"), "\(run.stdout)")
        #expect(run.stdout.contains("stopped after the canary of 2"), "\(run.stdout)")
        // --all prints only the failures, then the table of failures by error.
        #expect(!run.stdout.contains("migrated  a0"), "\(run.stdout)")
        let table = run.stdout.split(separator: "\n").drop { !$0.hasPrefix("ERROR") }
        #expect(table.count == 2 && table.last!.hasPrefix("MigrationFailed") && table.last!.contains("  1  a1"), "\(run.stdout)")

        let bad = try E2E.accountctl(["migrate", "--all", "--canary", "0"], socket: daemon.socket)
        #expect(bad.status == 2 && bad.stderr.contains("--canary must be a whole number from 1"), "\(bad.stderr)")
        let raw = try daemon.client().callOne(#"{"method":"io.accountd.Migrate","parameters":{"all":true,"maxFailures":0}}"#)
        #expect(raw.error == .invalidParameter && raw.parameters["parameter"] == "maxFailures", "\(raw.encoded())")
        for name in Self.names.dropFirst(2) { #expect(try Self.version(daemon, name) == "1") }
    }
}
