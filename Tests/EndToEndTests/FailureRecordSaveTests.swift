import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A save of `failures.json` that fails loses nothing silently (hostile34c H6), against the real
/// daemon: the record is kept in `failures.json.unsaved` and read back at the next start; when
/// even that cannot be written, `accountd_failure_records_lost` counts the records held only in
/// memory (AccountdFailureRecordLost fires) until a save, tried again at each scrape, succeeds;
/// no `.failures.json.tmp-*` file is left by a failed save, and those found at start are removed.
@Suite struct FailureRecordSaveTests {
    /// Two accounts whose migration to ``FleetFailureTests/v2`` fails (duplicate codes), and one
    /// that migrates.
    static func failingAccounts(in dir: borrowing TestDirectory) throws -> (dataRoot: String, bundle: String) {
        let dataRoot = dir.sub("data")
        let old = try BundleFixture.write(at: dir.sub("v1"), steps: FleetFailureTests.v1)
        let new = try BundleFixture.write(at: dir.sub("v2"), steps: FleetFailureTests.v2)
        for name in ["k3", "k7", "ok"] {
            try E2E.createOffline(name, dataRoot: dataRoot, bundle: old)
            try E2E.sqlite3(dataRoot + "/accounts/\(name).sqlite", name == "ok" ? "INSERT INTO item VALUES (1, 1);" : "INSERT INTO item VALUES (1, 7), (2, 7);")
        }
        return (dataRoot, new)
    }

    static func leftovers(_ dataRoot: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dataRoot).filter { $0.hasPrefix(".failures.json.tmp-") }
    }

    @Test func aRecordThatCannotReplaceFailuresJSONIsKeptAndReadBackAtTheNextStart() throws {
        let dir = TestDirectory()
        let (dataRoot, bundle) = try Self.failingAccounts(in: dir)
        // What an older daemon's failed save left behind.
        try Files.write("{}", to: dataRoot + "/.failures.json.tmp-1-DEADBEEF")
        var daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        #expect(try Self.leftovers(dataRoot).isEmpty, "removed at start")
        #expect(daemon.log.contains(".failures.json.tmp-1-DEADBEEF"), "\(daemon.log.suffix(2000))")

        // A folder in failures.json's place: the save cannot replace it.
        try FileManager.default.createDirectory(atPath: dataRoot + "/failures.json", withIntermediateDirectories: false)
        #expect(try E2E.accountctl(["migrate", "k3", "k7"], socket: daemon.socket).status == 1)
        #expect(try FleetFailureTests.byState(daemon)["failed"] == 2)
        #expect(try Self.leftovers(dataRoot).isEmpty, "a failed save leaves no temporary file")
        #expect(FileManager.default.fileExists(atPath: dataRoot + "/failures.json.unsaved"))
        #expect(MetricsTests.samples(try MetricsTests.metrics(daemon))["accountd_failure_records_lost"] == 0, "kept: nothing lost")

        // A restart with the folder gone: both still count, read from where the save kept them.
        _ = E2E.stop(daemon)
        try FileManager.default.removeItem(atPath: dataRoot + "/failures.json")
        daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        #expect(try FleetFailureTests.byState(daemon)["failed"] == 2, "\(daemon.log.suffix(2000))")
        #expect(try daemon.client().callOne("status k7").parameters["problem"]?.stringValue?.contains("UNIQUE") == true)
        // The next save writes failures.json, and the record kept aside goes.
        #expect(try E2E.accountctl(["migrate", "ok"], socket: daemon.socket).status == 0)
        #expect(try E2E.accountctl(["migrate", "k3"], socket: daemon.socket).status == 1)
        #expect(FileManager.default.fileExists(atPath: dataRoot + "/failures.json"))
        #expect(!FileManager.default.fileExists(atPath: dataRoot + "/failures.json.unsaved"))
        #expect(try Self.leftovers(dataRoot).isEmpty)
    }

    @Test func recordsThatCannotBeSavedAnywhereCountLostUntilASaveSucceeds() throws {
        let dir = TestDirectory()
        let (dataRoot, bundle) = try Self.failingAccounts(in: dir)
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        for name in ["failures.json", "failures.json.unsaved"] {
            try FileManager.default.createDirectory(atPath: dataRoot + "/" + name, withIntermediateDirectories: false)
        }
        #expect(try E2E.accountctl(["migrate", "k3", "k7"], socket: daemon.socket).status == 1)
        let samples = MetricsTests.samples(try MetricsTests.metrics(daemon))
        #expect(samples["accountd_failure_records_lost"] == 2, "\(samples)")
        #expect(samples[#"accountd_accounts_by_state{state="failed"}"#] == 2, "\(samples)")
        #expect(try Self.leftovers(dataRoot).isEmpty, "a failed save leaves no temporary file")
        #expect(daemon.log.contains("lost then unless a later save succeeds"), "\(daemon.log.suffix(2000))")
        let file = dir.sub("accountd.prom")
        #expect(try FleetMetricsTests.writeTextfile(file, socket: daemon.socket).status == 0)
        if let firing = try FleetMetricsTests.firing(file) {
            #expect(firing.contains("AccountdFailureRecordLost"), "\(firing)")
        }

        // The way cleared: the next scrape saves the record, and nothing counts lost.
        for name in ["failures.json", "failures.json.unsaved"] { try FileManager.default.removeItem(atPath: dataRoot + "/" + name) }
        let after = MetricsTests.samples(try MetricsTests.metrics(daemon))
        #expect(after["accountd_failure_records_lost"] == 0, "\(after)")
        let saved = try String(contentsOfFile: dataRoot + "/failures.json", encoding: .utf8)
        #expect(saved.contains("\"k3\"") && saved.contains("\"k7\""), "\(saved)")
    }
}
