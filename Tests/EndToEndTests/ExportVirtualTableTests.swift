import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Exports keep full-text and R*Tree indexes: the `sql` export rebuilds virtual tables and
/// their shadow tables as `sqlite3 .dump` does, so every search answers the same after
/// `sqlite3 new.db < dump.sql`; the `jsonl` export carries shadow tables and not virtual ones.
@Suite struct ExportVirtualTableTests {
    /// A bundle with an FTS5 external-content table over a table without an INTEGER PRIMARY KEY
    /// (kept in step by triggers), two contentless FTS5 tables (one trigram, named so that its
    /// name starts with the other's), an FTS4 table and an R*Tree table, plus a view over one.
    static let steps = [
        """
        CREATE TABLE note (title TEXT NOT NULL, body TEXT NOT NULL);
        CREATE VIRTUAL TABLE note_fts USING fts5(title, body, content='note');
        CREATE TRIGGER note_ai AFTER INSERT ON note BEGIN
          INSERT INTO note_fts(rowid, title, body) VALUES (new.rowid, new.title, new.body);
        END;
        CREATE TRIGGER note_ad AFTER DELETE ON note BEGIN
          INSERT INTO note_fts(note_fts, rowid, title, body) VALUES ('delete', old.rowid, old.title, old.body);
        END;
        CREATE VIRTUAL TABLE message_search USING fts5(subject, body, content='');
        CREATE VIRTUAL TABLE message_search_trigram USING fts5(body, content='', tokenize="trigram");
        """,
        """
        CREATE VIRTUAL TABLE page USING fts4(text);
        CREATE VIRTUAL TABLE place USING rtree(id, min_x, max_x, min_y, max_y);
        CREATE VIEW word3_notes AS SELECT rowid, title FROM note_fts WHERE note_fts MATCH 'word3';
        """,
    ]

    /// 200 rows in each index, written in two batches (so FTS indexes have several segments);
    /// `note` gets 220 rows and loses 20, so its rowids have gaps the index refers to.
    static let fill = """
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 220)
        INSERT INTO note(title, body) SELECT 'note ' || i, 'word' || (i % 7) || ' common body ' || i FROM n;
        DELETE FROM note WHERE rowid % 11 = 5;
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
        INSERT INTO message_search(rowid, subject, body) SELECT i * 3, 'subject ' || i, 'alpha' || (i % 5) || ' beta gamma ' || i FROM n;
        WITH RECURSIVE n(i) AS (SELECT 101 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
        INSERT INTO message_search(rowid, subject, body) SELECT i * 3, 'subject ' || i, 'alpha' || (i % 5) || ' beta' FROM n;
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
        INSERT INTO message_search_trigram(rowid, body) SELECT i * 7, 'abcdef' || printf('%04d', i) FROM n;
        WITH RECURSIVE n(i) AS (SELECT 101 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
        INSERT INTO message_search_trigram(rowid, body) SELECT i * 7, 'xyzdef' || printf('%04d', i) FROM n;
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
        INSERT INTO page(docid, text) SELECT 1000 + i, 'page text' || (i % 4) || ' lorem ' || i FROM n;
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
        INSERT INTO place(id, min_x, max_x, min_y, max_y) SELECT i, i, i + 0.5, i * 2, i * 2 + 1.25 FROM n;
        """

    /// Searches whose answers must not change, each with how many rows it finds on the account.
    static let searches: [(query: String, count: Int)] = [
        ("SELECT rowid FROM note_fts WHERE note_fts MATCH 'word3' ORDER BY rowid;", 29),
        ("SELECT rowid, title FROM note_fts WHERE note_fts MATCH 'common' ORDER BY rowid;", 200),
        ("SELECT * FROM word3_notes ORDER BY rowid;", 29),
        ("SELECT rowid FROM message_search WHERE message_search MATCH 'alpha2' ORDER BY rowid;", 40),
        ("SELECT rowid, round(bm25(message_search), 9) FROM message_search WHERE message_search MATCH 'beta OR gamma' ORDER BY rank, rowid;", 200),
        ("SELECT rowid FROM message_search_trigram WHERE message_search_trigram MATCH 'abcdef' ORDER BY rowid;", 100),
        ("SELECT rowid FROM message_search_trigram WHERE message_search_trigram MATCH 'def015' ORDER BY rowid;", 10),
        ("SELECT rowid FROM message_search_trigram WHERE message_search_trigram MATCH 'def' ORDER BY rowid;", 200),
        ("SELECT docid, text FROM page WHERE page MATCH 'text2' ORDER BY docid;", 50),
        ("SELECT docid, offsets(page) FROM page WHERE page MATCH 'lorem' ORDER BY docid;", 200),
        ("SELECT id FROM place WHERE min_x >= 50 AND max_x <= 120.5 AND min_y >= 130 ORDER BY id;", 56),
        ("SELECT * FROM place ORDER BY id;", 200),
    ]

    /// The shadow tables the bundle's virtual tables keep their data in.
    static let shadowTables: Set<String> = [
        "note_fts_data", "note_fts_idx", "note_fts_docsize", "note_fts_config",
        "message_search_data", "message_search_idx", "message_search_docsize", "message_search_config",
        "message_search_trigram_data", "message_search_trigram_idx", "message_search_trigram_docsize",
        "message_search_trigram_config",
        "page_content", "page_segments", "page_segdir", "page_docsize", "page_stat",
        "place_node", "place_rowid", "place_parent",
    ]
    static let virtualTables: Set<String> = ["note_fts", "message_search", "message_search_trigram", "page", "place"]

    /// A daemon on the search bundle with account `alice` created by it and filled by sqlite3.
    static func prepare(_ dir: borrowing TestDirectory) throws -> DaemonProcess {
        let daemon = try E2E.daemonWithAlice(dir, steps: steps, fill: fill)
        // The fixture is what the test says it is: these are the file's shadow tables.
        let shadows = try E2E.sql(daemon.accountPath("alice"), "SELECT name FROM pragma_table_list WHERE type = 'shadow';")
        try #require(Set(shadows.split(separator: "\n").map(String.init)) == shadowTables)
        return daemon
    }

    /// Every row of `table` as SQL literals, in the table's own order.
    static func rows(_ table: String, in database: String) throws -> String {
        try E2E.sql(database, ".mode quote\nSELECT * FROM \"\(table)\";")
    }

    @Test func sqlExportKeepsEverySearchAndShadowRow() throws {
        let dir = TestDirectory()
        let daemon = try Self.prepare(dir)
        let account = daemon.accountPath("alice")
        let dump = dir.sub("dump.sql")
        let result = try E2E.accountctl(["export", "alice", "--format", "sql", "-o", dump], socket: daemon.socket)
        try #require(result.status == 0, "\(result.stderr)")
        let rebuilt = dir.sub("new.db")
        try E2E.sqlite3(rebuilt, String(contentsOfFile: dump, encoding: .utf8))

        #expect(try E2E.sql(rebuilt, ExportRoundTripTests.masterQuery) == E2E.sql(account, ExportRoundTripTests.masterQuery))
        // The bundle has no AUTOINCREMENT, so no sqlite_sequence to compare.
        let records = ExportRoundTripTests.recordsQuery.replacingOccurrences(of: "SELECT name, seq FROM sqlite_sequence ORDER BY name;\n", with: "")
        #expect(records != ExportRoundTripTests.recordsQuery)
        #expect(try E2E.sql(rebuilt, records) == E2E.sql(account, records))
        for (query, count) in Self.searches {
            let expected = try E2E.sql(account, query)
            #expect(expected.split(separator: "\n").count == count, "on the account: \(query)")
            #expect(try E2E.sql(rebuilt, query) == expected, "\(query)")
        }
        for table in Self.shadowTables.sorted() {
            #expect(try Self.rows(table, in: rebuilt) == Self.rows(table, in: account), "shadow table \(table)")
        }
        // Rowids the external-content index points at, gaps included.
        #expect(try Self.rows("note", in: rebuilt) == Self.rows("note", in: account))
        #expect(try E2E.sql(rebuilt, "SELECT rowid FROM note ORDER BY rowid;") == E2E.sql(account, "SELECT rowid FROM note ORDER BY rowid;"))
        #expect(try TableDump.dumpFile(path: rebuilt) == TableDump.dumpFile(path: account))
        #expect(try E2E.sql(rebuilt, "PRAGMA integrity_check;") == "ok")
        // Each module's own check of its index; a failed one makes sqlite3 exit non-zero.
        try E2E.sql(
            rebuilt,
            """
            INSERT INTO note_fts(note_fts) VALUES ('integrity-check');
            INSERT INTO message_search(message_search) VALUES ('integrity-check');
            INSERT INTO message_search_trigram(message_search_trigram) VALUES ('integrity-check');
            INSERT INTO page(page) VALUES ('integrity-check');
            """)
        #expect(try E2E.sql(rebuilt, "SELECT rtreecheck('place');") == "ok")
        // The rebuilt indexes take new rows like the account's do.
        let more = """
            INSERT INTO note(title, body) VALUES ('late', 'word3 late');
            INSERT INTO message_search(rowid, subject, body) VALUES (9999, 'late', 'alpha2');
            SELECT count(*) FROM word3_notes;
            SELECT count(*) FROM message_search WHERE message_search MATCH 'alpha2';
            """
        #expect(try E2E.sql(rebuilt, more) == "30\n41")
    }

    @Test func jsonlExportCarriesShadowTablesAndNotVirtualOnes() throws {
        let dir = TestDirectory()
        let daemon = try Self.prepare(dir)
        let account = daemon.accountPath("alice")
        let replies = try daemon.client().call(#"{"method":"io.accountd.Export","parameters":{"account":"alice","format":"jsonl"},"more":true}"#)
        let final = try #require(replies.last)
        #expect(final.error == nil)
        var byTable: [String: [JSONValue]] = [:]
        for reply in replies.dropLast() {
            let table = try #require(reply.parameters["table"]?.stringValue)
            byTable[table, default: []].append(try #require(reply.parameters["row"]))
        }
        let tables = try #require(final.parameters["tables"]?.objectValue)
        // Every ordinary table of the file, shadow tables included, and no virtual table.
        let ordinary = try E2E.sql(account, "SELECT name FROM pragma_table_list WHERE type IN ('table', 'shadow') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\';")
        #expect(Set(tables.map(\.0)) == Set(ordinary.split(separator: "\n").map(String.init)))
        #expect(Set(tables.map(\.0)).isSuperset(of: Self.shadowTables))
        #expect(Set(tables.map(\.0)).isDisjoint(with: Self.virtualTables))
        for (table, count) in tables {
            #expect(count.intValue == Int64(try E2E.sql(account, "SELECT count(*) FROM \"\(table)\";")), "table \(table)")
            #expect(count.intValue == Int64(byTable[table]?.count ?? 0), "table \(table)")
        }
        // A shadow table's rows as they are stored: FTS4 keeps its text in page_content.
        let page = Dictionary(uniqueKeysWithValues: (byTable["page_content"] ?? []).map { ($0["docid"]?.intValue ?? -1, $0["c0text"] ?? .null) })
        #expect(page.count == 200)
        #expect(page[1007] == "page text3 lorem 7")
        #expect(byTable["place_rowid"]?.count == 200)
    }
}
