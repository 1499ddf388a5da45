import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A large `sql` import is built outside the account's lock, in the data root's `tmp/`, and
/// fast: the replay used to give SQLite a window to the end of the file for each statement,
/// which SQLite copies whole, so a 73 MB export ran for hours holding the account's lock
/// (issue 33's hostile review).
@Suite struct ImportLockTests {
    static let rows = 300_000

    @Test func aLargeSQLImportIsBuiltOutsideTheLockAndQuickly() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [ReplicationTests.createItems], names: ["create_items"])
        let hostA = try ImportTests.daemon(directory: dir.sub("host-a"), bundle: bundle)
        #expect(try hostA.client().callOne("switch big").parameters["action"] == "created")
        try E2E.sql(hostA.accountPath("big"), E2E.insertRows("item", count: Self.rows))
        _ = try hostA.client().callOne("switch other")
        let export = dir.sub("big.sql")
        let exported = try E2E.accountctl(["export", "big", "--format", "sql", "-o", export], socket: hostA.socket)
        try #require(exported.status == 0, "\(exported.stderr)")
        let sum = try E2E.sql(hostA.accountPath("big"), "SELECT count(*), sum(n) FROM item;")

        let hostB = try ImportTests.daemon(directory: dir.sub("host-b"), bundle: bundle)
        let started = Date()
        let importing = E2E.Locked<(status: Int32, stdout: String, stderr: String)?>(nil)
        let socket = hostB.socket
        // A thread of its own: the test's client blocks on its socket while the import runs.
        Thread.detachNewThread {
            let result = try? E2E.accountctl(["--json", "import", "big", export], socket: socket)
            importing.withLock { $0 = result ?? (-1, "", "accountctl did not run") }
        }
        // While the file is built (in tmp/, never under accounts/), the account is not held:
        // a call that takes its lock is answered at once (it has no file yet).
        var seen = ""
        let building = waitUntil(timeout: 60, interval: 0.005) {
            let inTmp = Hostile.listing(hostB.dataRoot + "/tmp").filter { $0.hasPrefix("import-big-") }
            let inAccounts = Hostile.listing(hostB.dataRoot + "/accounts").filter { $0.hasPrefix(".big.") }
            seen = "tmp: \(inTmp), accounts: \(inAccounts)"
            return !inTmp.isEmpty || !inAccounts.isEmpty || importing.current != nil
        }
        #expect(building && importing.current == nil, "the import was not seen while it ran: \(seen) \(hostB.log.suffix(2000))")
        #expect(seen.contains("import-big-") && !seen.contains(".big."), "built under the lock in accounts/: \(seen)")
        let asked = Date()
        let snapshot = try hostB.client().callOne("snapshot big")
        if importing.current == nil {
            #expect(snapshot.error == .accountNotFound, "\(snapshot.error?.rawValue ?? "ok") \(snapshot.parameters)")
            #expect(Date().timeIntervalSince(asked) < 2, "the account was held by the import")
        }
        #expect(waitUntil(timeout: 300, interval: 0.1) { importing.current != nil }, "the import did not end within 300 s")
        let took = Date().timeIntervalSince(started)
        let result = try #require(importing.current)
        try #require(result.status == 0, "\(result.stdout) \(result.stderr) \(hostB.log.suffix(2000))")
        #expect(try JSONParser.parse(result.stdout)["rows"]?.intValue == Int64(Self.rows))
        #expect(try E2E.sql(hostB.accountPath("big"), "SELECT count(*), sum(n) FROM item;") == sum)
        #expect(Hostile.listing(hostB.dataRoot + "/tmp").filter { $0.hasPrefix("import-") }.isEmpty)
        let size = (try? FileManager.default.attributesOfItem(atPath: export)[.size] as? Int) ?? 0
        print(String(format: "sql import: %d rows, %.1f MB of SQL, %.1f s", Self.rows, Double(size) / 1e6, took))
        #expect(took < 120, "the import took \(took) s")
    }
}
