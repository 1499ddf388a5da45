import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A long `sql` import stops when nobody will take its result: at SIGTERM the daemon exits
/// within seconds, and a client that goes away stops its import; either way the staging
/// file in `tmp/` is removed (hostile33b N6: the replay ran on for minutes, its file growing
/// by gigabytes, after SIGTERM and after its client had gone).
@Suite struct ImportStopTests {
    /// An `sql` export of a small account whose replay never ends in practice: one statement
    /// inserts 400 million generated rows before its COMMIT.
    static func endlessExport(_ dir: borrowing TestDirectory) throws -> (bundle: String, path: String) {
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [ReplicationTests.createItems], names: ["create_items"])
        let source = try ImportTests.daemon(directory: dir.sub("source"), bundle: bundle)
        #expect(try source.client().callOne("switch small").parameters["action"] == "created")
        _ = try source.client().callOne("switch other")
        let export = dir.sub("small.sql")
        let exported = try E2E.accountctl(["export", "small", "--format", "sql", "-o", export], socket: source.socket)
        try #require(exported.status == 0, "\(exported.stderr)")
        var text = try String(contentsOfFile: export, encoding: .utf8)
        let commit = try #require(text.range(of: "COMMIT;", options: .backwards), "no COMMIT in the export: \(text.prefix(2000))")
        text.insert(
            contentsOf: "INSERT INTO item(name, n) SELECT 'g' || x, x FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 400000000) SELECT x FROM c);\n",
            at: commit.lowerBound)
        let slow = dir.sub("slow.sql")
        try Files.write(text, to: slow)
        return (bundle, slow)
    }

    static func staging(_ daemon: DaemonProcess) -> [String] {
        Hostile.listing(daemon.dataRoot + "/tmp").filter { $0.hasPrefix("import-") }
    }

    @Test func sigtermStopsALongSQLImportWithinSeconds() throws {
        let dir = TestDirectory()
        let (bundle, slow) = try Self.endlessExport(dir)
        let daemon = try ImportTests.daemon(directory: dir.sub("host"), bundle: bundle)
        let client = try daemon.client()
        try client.send(E2E.request("Import", [("account", "slow1"), ("path", .string(slow)), ("rebind", true)]) + "\n")
        #expect(waitUntil(timeout: 20, interval: 0.05) { !Self.staging(daemon).isEmpty }, "the import did not start: \(daemon.log.suffix(2000))")
        Thread.sleep(forTimeInterval: 1)
        let stopping = Date()
        let status = E2E.stop(daemon, timeout: 20)
        let took = Date().timeIntervalSince(stopping)
        #expect(status != nil && took < 10, "the daemon took \(took) s to stop (status \(String(describing: status))): \(daemon.log.suffix(2000))")
        #expect(Self.staging(daemon).isEmpty, "staging left: \(Self.staging(daemon))")
        #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("slow1")))
    }

    @Test func aClientThatGoesAwayStopsItsImport() throws {
        let dir = TestDirectory()
        let (bundle, slow) = try Self.endlessExport(dir)
        let daemon = try ImportTests.daemon(directory: dir.sub("host"), bundle: bundle)
        do {
            let client = try daemon.client()
            try client.send(E2E.request("Import", [("account", "slow2"), ("path", .string(slow)), ("rebind", true)]) + "\n")
            #expect(waitUntil(timeout: 20, interval: 0.05) { !Self.staging(daemon).isEmpty }, "the import did not start: \(daemon.log.suffix(2000))")
            Thread.sleep(forTimeInterval: 1)
        }  // the client closes its socket here
        #expect(waitUntil(timeout: 10, interval: 0.1) { Self.staging(daemon).isEmpty }, "the import ran on: \(Self.staging(daemon))")
        #expect(!FileManager.default.fileExists(atPath: daemon.accountPath("slow2")))
        #expect(try daemon.client().callOne("ping").error == nil)
        #expect(E2E.stop(daemon, timeout: 20) == 0)
    }
}
