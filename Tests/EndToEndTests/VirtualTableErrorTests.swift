import AccountdTestSupport
import Foundation
import Testing

/// hostile31e G2: an FTS5 index of external content (kept by triggers, as docs/APPS.md
/// suggests) that the app's own statements made inconsistent answers `SQLITE_CORRUPT_VTAB`.
/// That is the statement's `SQLError`, not a damaged file: the account is not marked
/// `corrupt`, and the operator is not told to restore a snapshot.
@Suite struct VirtualTableErrorTests {
    static let notes = """
        CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
        CREATE VIRTUAL TABLE notes_fts USING fts5(body, content='notes', content_rowid='id');
        CREATE TRIGGER notes_ai AFTER INSERT ON notes BEGIN
          INSERT INTO notes_fts(rowid, body) VALUES (new.id, new.body);
        END;
        CREATE TRIGGER notes_ad AFTER DELETE ON notes BEGIN
          INSERT INTO notes_fts(notes_fts, rowid, body) VALUES ('delete', old.id, old.body);
        END;
        """

    @Test func anInconsistentFullTextIndexIsTheStatementsErrorNotADamagedFile() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [Self.notes])
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        defer { _ = E2E.stop(daemon) }
        let socket = daemon.socket
        #expect(try E2E.accountctl(["switch", "alice"], socket: socket).status == 0)
        for body in ["milk", "eggs"] {
            let added = try E2E.accountctl(["exec", "INSERT INTO notes(body) VALUES (?)", "\"\(body)\""], socket: socket)
            #expect(added.status == 0, "\(added.stderr)")
        }
        let emptied = try E2E.accountctl(["exec", "INSERT INTO notes_fts(notes_fts) VALUES ('delete-all')"], socket: socket)
        #expect(emptied.status == 0, "\(emptied.stderr)")

        // The trigger's 'delete' finds no such entry in the index: SQLITE_CORRUPT_VTAB.
        let deleted = try E2E.accountctl(["--json", "exec", "DELETE FROM notes"], socket: socket)
        #expect(deleted.status != 0)
        #expect(deleted.stderr.contains("SQLError"), "\(deleted.stdout) \(deleted.stderr)")
        #expect(!deleted.stderr.contains("AccountCorrupt") && !deleted.stderr.contains("Restore a snapshot"), "\(deleted.stderr)")

        let status = try daemon.client().callOne("status alice")
        #expect(status.parameters["state"] == "current", "\(status.encoded())")
        #expect(try FleetFailureTests.byState(daemon)["corrupt"] == 0)
        // The rows are all still there, and the file is sound.
        let rows = try E2E.accountctl(["query", "--json", "SELECT count(*) AS n FROM notes"], socket: socket)
        #expect(rows.stdout.contains("\"rows\":[[2]]"), "\(rows.stdout) \(rows.stderr)")
        #expect(Hostile.integrity(daemon.accountPath("alice")) == "ok")
    }
}
