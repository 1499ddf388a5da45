import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// An import brings back only the schema an export writes: a file at the bundle's version
/// whose schema is not the bundle's (here a trigger that deletes every row) is refused, as
/// `verify` would find it, with nothing left behind (hostile33d #3).
@Suite struct ImportSchemaTests {
    /// The trigger a hostile file carries: every insert into `author` empties it.
    static let trigger = "CREATE TRIGGER t AFTER INSERT ON author BEGIN DELETE FROM author; END;"

    @Test func aFileWhoseSchemaIsNotTheBundlesIsRefusedInBothForms() throws {
        let dir = TestDirectory()
        let (_, files, _) = try ImportTests.exports(dir)
        // The sql export with the trigger before its COMMIT, and the sqlite export with it added.
        let sql = try String(contentsOfFile: try #require(files["sql"]), encoding: .utf8)
        let commit = try #require(sql.range(of: "COMMIT;", options: .backwards))
        let evilSQL = dir.sub("trigger.sql")
        try Files.write(sql.replacingCharacters(in: commit, with: Self.trigger + "\nCOMMIT;"), to: evilSQL)
        let evilSQLite = dir.sub("trigger.sqlite")
        try FileManager.default.copyItem(atPath: try #require(files["sqlite"]), toPath: evilSQLite)
        _ = try E2E.sqlite3(evilSQLite, Self.trigger)

        let bundle = try BundleFixture.write(at: dir.sub("bundle-b"), steps: ExportRoundTripTests.steps)
        let hostB = try ImportTests.daemon(directory: dir.sub("host-b"), bundle: bundle)
        let client = try hostB.client()
        #expect(try client.callOne("switch keep").parameters["action"] == "created")
        let before = ImportTests.listing(hostB.dataRoot)
        for file in [evilSQL, evilSQLite] {
            let reply = try ImportTests.importing(client, "alice", file)
            let message = reply.parameters["message"]?.stringValue ?? ""
            let details = reply.parameters["details"]?.arrayValue?.compactMap(\.stringValue) ?? []
            let difference = "trigger t: only in the file, missing from the bundle's target schema"
            #expect(reply.error == .accountCorrupt, "\(file): \(reply.error?.rawValue ?? "ok") \(message)")
            #expect(message.contains(difference) && message.contains("nothing was changed"), "\(file): \(message)")
            #expect(details == [difference], "\(file): \(details)")
            #expect(!FileManager.default.fileExists(atPath: hostB.accountPath("alice")), "\(file) was imported")
            #expect(ImportTests.listing(hostB.dataRoot) == before, "\(file) left something behind")
        }
        // The clean export still comes back, and verify finds it healthy.
        let clean = try ImportTests.importing(client, "alice", try #require(files["sql"]))
        #expect(clean.error == nil, "\(clean.parameters)")
        let verify = try E2E.accountctl(["verify", "alice"], socket: hostB.socket)
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
    }

    /// A file at an older version of the bundle is compared with what the bundle's migrations
    /// up to that version build: the same trigger is refused there too, and the clean export
    /// comes back (to be migrated at its next open).
    @Test func aFileAtAnOlderVersionIsComparedWithThatVersionsSchema() throws {
        let dir = TestDirectory()
        let (_, files, _) = try ImportTests.exports(dir)
        let evil = dir.sub("trigger.sqlite")
        try FileManager.default.copyItem(atPath: try #require(files["sqlite"]), toPath: evil)
        _ = try E2E.sqlite3(evil, Self.trigger)

        // Host B's bundle has one migration more than the exports' files.
        let older = ExportRoundTripTests.steps.count
        let bundle = try BundleFixture.write(
            at: dir.sub("bundle-b"), steps: ExportRoundTripTests.steps + ["CREATE TABLE later (id INTEGER PRIMARY KEY);"])
        let hostB = try ImportTests.daemon(directory: dir.sub("host-b"), bundle: bundle)
        let client = try hostB.client()
        let reply = try ImportTests.importing(client, "alice", evil)
        let message = reply.parameters["message"]?.stringValue ?? ""
        let difference = "trigger t: only in the file, missing from the bundle's schema at version \(older)"
        #expect(reply.error == .accountCorrupt, "\(reply.error?.rawValue ?? "ok") \(message)")
        #expect(message.contains(difference) && message.contains("nothing was changed"), "\(message)")
        #expect(!FileManager.default.fileExists(atPath: hostB.accountPath("alice")))

        let clean = try ImportTests.importing(client, "alice", try #require(files["sqlite"]))
        #expect(clean.error == nil, "\(clean.parameters)")
        #expect(clean.parameters["version"] == .int(Int64(older)), "\(clean.parameters)")
        let switched = try client.callOne("switch alice")
        #expect(switched.parameters["version"] == .int(Int64(older + 1)), "\(switched.encoded())")
        let verify = try E2E.accountctl(["verify", "alice"], socket: hostB.socket)
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
    }
}
