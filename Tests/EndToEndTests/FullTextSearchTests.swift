import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// An app keeps a full-text index in step with its table the way SQLite's FTS5 documentation
/// says: an external-content table and three triggers, all in the bundle. Its `Execute`s fire
/// the triggers, which write the index (a virtual table), and its `Query`s search it.
@Suite struct FullTextSearchTests {
    static let notes = """
        CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL);
        CREATE VIRTUAL TABLE notes_fts USING fts5(title, body, content='notes', content_rowid='id');
        CREATE TRIGGER notes_ai AFTER INSERT ON notes BEGIN
          INSERT INTO notes_fts(rowid, title, body) VALUES (new.id, new.title, new.body);
        END;
        CREATE TRIGGER notes_ad AFTER DELETE ON notes BEGIN
          INSERT INTO notes_fts(notes_fts, rowid, title, body) VALUES ('delete', old.id, old.title, old.body);
        END;
        CREATE TRIGGER notes_au AFTER UPDATE ON notes BEGIN
          INSERT INTO notes_fts(notes_fts, rowid, title, body) VALUES ('delete', old.id, old.title, old.body);
          INSERT INTO notes_fts(rowid, title, body) VALUES (new.id, new.title, new.body);
        END;
        CREATE VIEW note_hits AS SELECT rowid AS id, title FROM notes_fts WHERE notes_fts MATCH 'milk';
        """

    @Test func executesFireTheBundlesFullTextTriggersAndQueriesSearchTheIndex() throws {
        let dir = TestDirectory()
        let bundle = try BundleFixture.write(at: dir.sub("bundle"), steps: [Self.notes])
        let daemon = try E2E.daemon(directory: dir.path, bundle: bundle)
        let client = try daemon.client()
        try #require(try client.callOne("switch alice").error == nil)
        let written = try client.callOne(
            DataCalls.execute("alice", [
                ("INSERT INTO notes(title, body) VALUES (?, ?)", ["shopping", "milk and bread"]),
                ("INSERT INTO notes(title, body) VALUES (?, ?)", ["school", "sign the form"]),
                ("UPDATE notes SET body = ? WHERE title = ?", ["sign the form, buy milk", "school"]),
                ("DELETE FROM notes WHERE title = ?", ["shopping"]),
            ]))
        #expect(written.error == nil, "\(written.encoded())")
        let found = try client.callOne(DataCalls.query("alice", "SELECT title FROM notes_fts WHERE notes_fts MATCH ? ORDER BY rowid", ["milk"]))
        #expect(found.error == nil, "\(found.encoded())")
        #expect(found.parameters["rows"] == .array([.array([.string("school")])]), "\(found.encoded())")
        let viewed = try client.callOne(DataCalls.query("alice", "SELECT title FROM note_hits"))
        #expect(viewed.parameters["rows"] == .array([.array([.string("school")])]), "\(viewed.encoded())")
        // The index agrees with its content table, as FTS5 checks it.
        let checked = try client.callOne(DataCalls.execute("alice", [("INSERT INTO notes_fts(notes_fts) VALUES ('integrity-check')", [])]))
        #expect(checked.error == nil, "\(checked.encoded())")
    }
}
