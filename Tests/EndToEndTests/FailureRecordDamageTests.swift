import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A damaged `failures.json` loses no more than it must, and the loss shows (hostile34b N4),
/// against the real daemon: a malformed entry is skipped with a log line naming it while the
/// others count; a file that is not JSON at all is moved aside (not overwritten by the next
/// failure), and `accountd_failure_records_lost` says so, which fires AccountdFailureRecordLost.
@Suite struct FailureRecordDamageTests {
    static func entry(_ state: String) -> String {
        #"{"error":"MigrationFailed","state":"\#(state)","message":"it failed","at":"2026-01-01T00:00:00Z"}"#
    }

    @Test func aMalformedEntryIsSkippedAndTheOthersCount() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [FleetStopTests.item])
        let dataRoot = dir.sub("data")
        for name in ["k05", "k07"] { try E2E.createOffline(name, dataRoot: dataRoot, bundle: bundle) }
        try Files.write(#"{"k05": \#(Self.entry("failed")), "k07": {"state": "corrupt"}}"#, to: dataRoot + "/failures.json")
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        let samples = MetricsTests.samples(try MetricsTests.metrics(daemon))
        #expect(samples[#"accountd_accounts_by_state{state="failed"}"#] == 1, "k05's record counts: \(samples)")
        #expect(samples[#"accountd_accounts_by_state{state="corrupt"}"#] == 0, "\(samples)")
        #expect(samples["accountd_failure_records_lost"] == 1, "\(samples)")
        #expect(daemon.log.contains("the entry of account k07 cannot be read (it has no error)"), "\(daemon.log.suffix(2000))")
        let file = dir.sub("accountd.prom")
        #expect(try FleetMetricsTests.writeTextfile(file, socket: daemon.socket).status == 0)
        if let firing = try FleetMetricsTests.firing(file) {
            #expect(firing == ["AccountdAccountFailed", "AccountdFailureRecordLost"], "\(firing)")
        }
    }

    @Test func aFileThatIsNotJSONIsMovedAsideAndTheLossShows() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [FleetStopTests.item])
        let dataRoot = dir.sub("data")
        try E2E.createOffline("k05", dataRoot: dataRoot, bundle: bundle)
        try Files.write("this is {not json", to: dataRoot + "/failures.json")
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        let samples = MetricsTests.samples(try MetricsTests.metrics(daemon))
        #expect(samples["accountd_failure_records_lost"] == 1, "\(samples)")
        let aside = try FileManager.default.contentsOfDirectory(atPath: dataRoot).filter { $0.hasPrefix("failures.json.damaged-") }
        #expect(aside.count == 1, "\(aside)")
        #expect(!FileManager.default.fileExists(atPath: dataRoot + "/failures.json"))
        #expect(daemon.log.contains("moved aside to"), "\(daemon.log.suffix(2000))")

        // The next failure writes a new record; the damaged file stays as it was.
        try E2E.makeTooNewAccount("k06", dataRoot: dataRoot, bundle: bundle, in: dir)
        #expect(try E2E.accountctl(["migrate", "k06"], socket: daemon.socket).status != 0)
        #expect(FileManager.default.fileExists(atPath: dataRoot + "/failures.json"))
        if let name = aside.first {
            #expect(try String(contentsOfFile: dataRoot + "/" + name, encoding: .utf8) == "this is {not json")
        }
        let file = dir.sub("accountd.prom")
        #expect(try FleetMetricsTests.writeTextfile(file, socket: daemon.socket).status == 0)
        if let firing = try FleetMetricsTests.firing(file) {
            #expect(firing.contains("AccountdFailureRecordLost"), "\(firing)")
        }
    }
}
