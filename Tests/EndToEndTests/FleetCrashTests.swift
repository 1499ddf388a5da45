import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// kill -9 of the daemon in the middle of `Migrate {all}`: every account is whole, at its
/// old version or its new one, with all its rows; a second Migrate completes the rest.
@Suite struct FleetCrashTests {
    static let steps = [
        "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER);",
        // A table rebuild: the kind of step a crash must never leave half done.
        """
        CREATE TABLE item_new (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0, label TEXT);
        INSERT INTO item_new (id, name, qty, label) SELECT id, name, coalesce(qty, 0), upper(name) FROM item;
        DROP TABLE item;
        ALTER TABLE item_new RENAME TO item;
        CREATE INDEX item_label ON item(label);
        """,
    ]

    @Test func killedMidFleetEveryAccountIsWholeAndARerunFinishes() throws {
        let dir = TestDirectory()
        let v1 = try BundleFixture.write(at: dir.sub("v1"), steps: Array(Self.steps.prefix(1)))
        let v2 = try BundleFixture.write(at: dir.sub("v2"), steps: Self.steps)
        let names = (0..<40).map { String(format: "f%02d", $0) }
        for (index, name) in names.enumerated() {
            try E2E.createOffline(name, dataRoot: dir.sub("data"), bundle: v1)
            _ = try E2E.sqlite3(
                dir.sub("data") + "/accounts/\(name).sqlite",
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(2000 + index)) "
                    + "INSERT INTO item(id, name, qty) SELECT i, 'item ' || i, CASE WHEN i % 3 = 0 THEN NULL ELSE i END FROM n;")
        }
        let daemon = try E2E.daemon(directory: dir.path, bundle: v2)

        // Kill it once a few accounts are done and others are under way.
        let client = try daemon.client()
        try client.send(#"{"method":"io.accountd.Migrate","parameters":{"all":true},"more":true}"# + "\n")
        for _ in 0..<5 { _ = try client.readReply() }
        _ = daemon.stop(signal: SIGKILL)

        var versions: [String: Int] = [:]
        for (index, name) in names.enumerated() {
            let path = daemon.accountPath(name)
            #expect(try E2E.sql(path, "PRAGMA integrity_check;") == "ok", "\(name)")
            let version = try #require(Int(try E2E.sql(path, "PRAGMA user_version;")))
            versions[name] = version
            #expect(version == 1 || version == 2, "\(name) at version \(version)")
            #expect(try E2E.sql(path, "SELECT count(*) FROM item;") == String(2000 + index), "\(name) lost rows at version \(version)")
            if version == 2 {
                #expect(try E2E.sql(path, "SELECT count(*) FROM item WHERE label = upper(name) AND qty IS NOT NULL;") == String(2000 + index))
            }
        }
        #expect(versions.values.contains(2), "the kill came after five accounts were reported done")

        try daemon.restart()
        defer { _ = E2E.stop(daemon) }
        let summary = try daemon.client().callOne(#"{"method":"io.accountd.Migrate","parameters":{"all":true}}"#)
        #expect(summary.parameters["failed"] == 0 && summary.parameters["count"] == 40, "\(summary.encoded())")
        #expect(summary.parameters["current"] == JSONValue(versions.values.filter { $0 == 2 }.count), "\(summary.encoded())")
        for (index, name) in names.enumerated() {
            let path = daemon.accountPath(name)
            #expect(try E2E.sql(path, "PRAGMA user_version;") == "2", "\(name)")
            #expect(try E2E.sql(path, "SELECT count(*) FROM item;") == String(2000 + index), "\(name)")
        }
    }
}
