import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// A `-wal` (or `-shm`, `-journal`) left in `accounts/` without its account file (a file
/// removed by hand, a copy taken off the machine without it) belongs to no file there, yet
/// SQLite takes it for the log of whatever file is next put at that name, and replays another
/// database's pages onto it (hostile33f #1: a created, imported or pulled account then held
/// another database's rows and failed its integrity check, and Litestream shipped that). A
/// file put in place goes in without them.
@Suite struct LeftoverSidecarTests {
    /// A write-ahead log of another database, holding a table `intruder`: a copy of the
    /// `-wal` taken while that database's connection still had it.
    static func strayLog(_ dir: borrowing TestDirectory) throws -> String {
        let other = dir.sub("other.sqlite")
        let stray = dir.sub("stray-wal")
        _ = try E2E.sqlite3(
            other,
            """
            PRAGMA journal_mode=WAL;
            PRAGMA wal_autocheckpoint=0;
            CREATE TABLE intruder (x TEXT);
            INSERT INTO intruder VALUES ('not this account''s row');
            .shell cp '\(other)-wal' '\(stray)'
            """)
        try #require((Files.bytes(stray)?.count ?? 0) > 0, "no write-ahead log was copied")
        return stray
    }

    /// The file at `path` is sound and holds only what accountd put there.
    static func expectOwnFile(_ path: String, _ what: String) throws {
        #expect(try E2E.sql(path, "PRAGMA integrity_check;") == "ok", "\(what)")
        #expect(try E2E.sql(path, "SELECT count(*) FROM sqlite_master WHERE name = 'intruder';") == "0", "\(what): another database's table was replayed into it")
    }

    @Test func aCreatedAccountTakesNoLeftoverLog() throws {
        let dir = TestDirectory()
        let stray = try Self.strayLog(dir)
        try FileManager.default.createDirectory(atPath: dir.sub("host"), withIntermediateDirectories: true)
        let daemon = try E2E.daemon(directory: dir.sub("host"))
        try FileManager.default.copyItem(atPath: stray, toPath: daemon.accountPath("gone") + "-wal")
        let client = try daemon.client()
        let switched = try client.callOne("switch gone")
        #expect(switched.error == nil && switched.parameters["action"] == "created", "\(switched)")
        #expect(try client.callOne("set user theme \"dark\"").error == nil)
        #expect(try client.callOne("get user theme").parameters["value"] == "dark")
        #expect(try client.callOne("switch other").error == nil)
        try Self.expectOwnFile(daemon.accountPath("gone"), "created")
    }

    @Test func anImportedAccountTakesNoLeftoverLog() throws {
        let dir = TestDirectory()
        let stray = try Self.strayLog(dir)
        try FileManager.default.createDirectory(atPath: dir.sub("host"), withIntermediateDirectories: true)
        let daemon = try E2E.daemon(directory: dir.sub("host"))
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").error == nil)
        #expect(try client.callOne("set user theme \"dark\"").error == nil)
        let export = dir.sub("alice-export.sqlite")
        let exported = try E2E.accountctl(["export", "alice", "--format", "sqlite", "-o", export], socket: daemon.socket)
        try #require(exported.status == 0, "\(exported.stderr)")
        try FileManager.default.copyItem(atPath: stray, toPath: daemon.accountPath("carol") + "-wal")
        let imported = try E2E.accountctl(["import", "carol", export, "--rebind"], socket: daemon.socket)
        try #require(imported.status == 0, "\(imported.stdout) \(imported.stderr)")
        try Self.expectOwnFile(daemon.accountPath("carol"), "imported")
        #expect(try client.callOne("switch carol").error == nil)
        #expect(try client.callOne("get user theme").parameters["value"] == "dark")
    }
}
