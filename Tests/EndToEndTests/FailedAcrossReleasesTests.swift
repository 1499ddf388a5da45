import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A failed account stays counted `failed` across a change of the bundle until an open of it is
/// tried under the new one (hostile34b N3), against the real daemon: a hotfix release that
/// changes only `on-open.sql` keeps AccountdAccountFailed firing; a Migrate that fails again
/// keeps it; one that succeeds clears it.
@Suite struct FailedAcrossReleasesTests {
    static let steps = [
        "CREATE TABLE item (id INTEGER PRIMARY KEY, code INTEGER);",
        "CREATE UNIQUE INDEX item_code ON item(code);",
    ]

    static func failedCount(_ daemon: DaemonProcess) throws -> Double? {
        MetricsTests.samples(try MetricsTests.metrics(daemon))[#"accountd_accounts_by_state{state="failed"}"#]
    }

    @Test func aFailedAccountStaysFailedAcrossABundleChangeUntilItIsTriedAgain() throws {
        let dir = TestDirectory()
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: Array(Self.steps.prefix(1)))
        let release = try BundleFixture.write(at: dir.sub("release"), steps: Self.steps)
        let dataRoot = dir.sub("data")
        for (name, rows) in [("good", "(1, 7), (2, 8)"), ("dup", "(1, 7), (2, 7)")] {
            try E2E.createOffline(name, dataRoot: dataRoot, bundle: v1)
            try E2E.sqlite3(dataRoot + "/accounts/\(name).sqlite", "INSERT INTO item VALUES \(rows);")
        }
        let daemon = try E2E.daemon(directory: dir.path, bundle: release)
        defer { _ = E2E.stop(daemon) }
        #expect(try E2E.accountctl(["migrate", "--all"], socket: daemon.socket).status == 1, "dup fails")
        #expect(try Self.failedCount(daemon) == 1)

        // A hotfix of the same version: only a harmless on-open.sql added, then a reload.
        try Files.write("DELETE FROM item WHERE id < 0;\n", to: release + "/on-open.sql")
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(waitUntil(timeout: 30) { daemon.log.contains("reload: now serving bundle version 2") }, "\(daemon.log.suffix(2000))")
        #expect(try Self.failedCount(daemon) == 1, "not tried under the new bundle: still failed")
        let metricsFile = dir.sub("accountd.prom")
        #expect(try FleetMetricsTests.writeTextfile(metricsFile, socket: daemon.socket).status == 0)
        if let firing = try FleetMetricsTests.firing(metricsFile) {
            #expect(firing.contains("AccountdAccountFailed"), "\(firing)")
        }

        // Tried again and failing again: still failed. Its data fixed: the next try clears it.
        #expect(try E2E.accountctl(["migrate", "dup"], socket: daemon.socket).status == 1)
        #expect(try Self.failedCount(daemon) == 1)
        try E2E.sqlite3(dataRoot + "/accounts/dup.sqlite", "UPDATE item SET code = 9 WHERE id = 2;")
        let fixed = try E2E.accountctl(["migrate", "dup"], socket: daemon.socket)
        #expect(fixed.status == 0, "\(fixed.stdout) \(fixed.stderr)")
        #expect(try Self.failedCount(daemon) ?? 0 == 0)
    }
}
