import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Exports in every format give back exactly what the account holds: schema, rows of
/// every storage class, `sqlite_sequence`, `user_version` and `application_id`.
@Suite struct ExportRoundTripTests {
    /// A bundle with foreign keys, indexes, a view, a trigger, AUTOINCREMENT, a WITHOUT ROWID
    /// table and an untyped column.
    static let steps = [
        """
        CREATE TABLE author (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE, born INTEGER);
        CREATE TABLE book (
          id INTEGER PRIMARY KEY,
          author_id INTEGER NOT NULL REFERENCES author(id) ON DELETE CASCADE,
          title TEXT NOT NULL,
          price REAL,
          cover BLOB,
          note TEXT
        );
        CREATE INDEX book_author ON book(author_id);
        CREATE TABLE tag (
          book_id INTEGER NOT NULL REFERENCES book(id),
          label TEXT NOT NULL,
          weight REAL,
          PRIMARY KEY (book_id, label)
        ) WITHOUT ROWID;
        CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, what TEXT NOT NULL);
        CREATE TRIGGER book_audit AFTER INSERT ON book BEGIN
          INSERT INTO audit(what) VALUES ('book ' || NEW.id);
        END;
        """,
        """
        CREATE TABLE anything (k INTEGER PRIMARY KEY, v);
        CREATE VIEW book_titles AS SELECT b.title, a.name FROM book b JOIN author a ON a.id = b.author_id;
        CREATE UNIQUE INDEX tag_label ON tag(label, book_id);
        """,
    ]

    /// Text that must survive every format.
    static let names = [
        "Zoë «quoted» 'single' \"double\" `back`",
        "😀 emoji 👩‍👩‍👧 日本語 🇫🇷",
        "line1\nline2\ttab\\backslash\n\nafter a blank line\rand a lone CR",
    ]

    /// Rows of every storage class, written with the sqlite3 shell behind the daemon's back.
    static let fill = """
        PRAGMA foreign_keys = ON;
        INSERT INTO author(name, born) VALUES
          ('Zoë «quoted» ''single'' "double" `back`', 1970),
          ('😀 emoji 👩‍👩‍👧 日本語 🇫🇷', NULL),
          ('line1' || char(10) || 'line2' || char(9) || 'tab\\backslash' || char(10, 10) || 'after a blank line' || char(13) || 'and a lone CR', -5);
        INSERT INTO book(id, author_id, title, price, cover, note) VALUES
          (1, 1, 'First', 0.1, X'00FF10', NULL),
          (2, 2, 'Second', 1e300, X'', 'x'),
          (3, 3, 'Third', 1.0, NULL, ''),
          (9223372036854775807, 1, 'Max id', -2.5, zeroblob(3), 'last');
        INSERT INTO tag VALUES (1, 'a', 0.5), (2, 'b', NULL), (3, 'ü', 2.5), (9223372036854775807, 'z', 1e-300);
        INSERT INTO anything(k, v) VALUES
          (1, 9223372036854775807), (2, -9223372036854775808), (3, 0.1), (4, 1e300), (5, 1.0),
          (6, 'text'), (7, X'DEADBEEF'), (8, NULL), (9, 1.7976931348623157e308), (10, 5e-324),
          (11, 3.141592653589793), (12, -1e-300), (13, 0.30000000000000004), (14, 0), (15, -1),
          (16, ''), (17, X'00');
        DELETE FROM audit WHERE id = 2;
        """

    /// A daemon on the rich bundle with account `alice` created by it and filled by sqlite3.
    static func prepare(_ dir: borrowing TestDirectory) throws -> DaemonProcess {
        try E2E.daemonWithAlice(dir, steps: steps, fill: fill)
    }

    static let masterQuery = "SELECT type, name, tbl_name, quote(sql) FROM sqlite_master ORDER BY name;"
    static let recordsQuery = """
        SELECT name, seq FROM sqlite_sequence ORDER BY name;
        SELECT key, quote(value) FROM accountd_meta ORDER BY key;
        SELECT version, name, sha256, method FROM accountd_migrations ORDER BY version;
        PRAGMA user_version;
        PRAGMA application_id;
        """

    @Test func sqlExportRebuildsTheSameDatabase() throws {
        let dir = TestDirectory()
        let daemon = try Self.prepare(dir)
        let account = daemon.accountPath("alice")
        let dump = dir.sub("dump.sql")
        let result = try E2E.accountctl(["export", "alice", "--format", "sql", "-o", dump], socket: daemon.socket)
        #expect(result.status == 0, "\(result.stderr)")
        let text = try String(contentsOfFile: dump, encoding: .utf8)

        let rebuilt = dir.sub("new.db")
        try E2E.sqlite3(rebuilt, text)
        #expect(try E2E.sql(rebuilt, Self.masterQuery) == E2E.sql(account, Self.masterQuery))
        #expect(try E2E.sql(rebuilt, Self.recordsQuery) == E2E.sql(account, Self.recordsQuery))
        #expect(try E2E.sql(rebuilt, "PRAGMA user_version;") == "2")
        #expect(try E2E.sql(rebuilt, "PRAGMA application_id;") == String(0x6163_6374))
        let expected = try TableDump.dumpFile(path: account)
        #expect(expected["anything"]?.count == 17)
        #expect(try TableDump.dumpFile(path: rebuilt) == expected)
        // Storage classes exactly, which the dump above shows too, spelled out for the tricky ones.
        #expect(
            try E2E.sql(rebuilt, "SELECT k, typeof(v), quote(v) FROM anything WHERE k IN (1, 2, 5, 7, 16, 17) ORDER BY k;")
                == """
                1|integer|9223372036854775807
                2|integer|-9223372036854775808
                5|real|1.0
                7|blob|X'DEADBEEF'
                16|text|''
                17|blob|X'00'
                """)
        // The trigger was rebuilt, and after the rows: the audit rows were not doubled.
        #expect(try E2E.sql(rebuilt, "SELECT count(*) FROM audit;") == "3")
        #expect(try E2E.sql(rebuilt, "PRAGMA integrity_check; PRAGMA foreign_key_check;") == "ok")
        // AUTOINCREMENT goes on from the saved sequence, not from the largest id.
        #expect(try E2E.sql(rebuilt, "INSERT INTO audit(what) VALUES ('next'); SELECT max(id) FROM audit;") == "5")
    }

    @Test func sqliteExportIsAConsistentCopy() throws {
        let dir = TestDirectory()
        let daemon = try Self.prepare(dir)
        let account = daemon.accountPath("alice")
        let expected = try TableDump.dumpFile(path: account)

        // Through accountctl: --json with -o prints only the final reply.
        let copy = dir.sub("copy.sqlite")
        let result = try E2E.accountctl(["--json", "export", "alice", "--format", "sqlite", "-o", copy], socket: daemon.socket)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try E2E.jsonLines(result.stdout)
        #expect(lines.count == 1)
        let summary = try #require(lines.last)
        #expect(summary["format"] == "sqlite")
        let sha = try #require(summary["sha256"]?.stringValue)
        #expect(sha.count == 64)
        #expect(try E2E.sha256sum(copy) == sha)
        #expect(summary["sizeBytes"]?.intValue == Int64(Files.bytes(copy)?.count ?? -1))
        #expect(try E2E.sql(copy, "PRAGMA integrity_check;") == "ok")
        #expect(try TableDump.dumpFile(path: copy) == expected)
        #expect(try E2E.sql(copy, Self.masterQuery) == E2E.sql(account, Self.masterQuery))
        #expect(try E2E.sql(copy, Self.recordsQuery) == E2E.sql(account, Self.recordsQuery))

        // Through the raw protocol: base64 chunks, then {format, sizeBytes, sha256}.
        let replies = try daemon.client().call(#"{"method":"io.accountd.Export","parameters":{"account":"alice","format":"sqlite"},"more":true}"#)
        let final = try #require(replies.last)
        #expect(final.error == nil)
        #expect(final.continues == false)
        var data = Data()
        for reply in replies.dropLast() {
            #expect(reply.continues)
            let chunk = try #require(reply.parameters["data"]?.stringValue)
            data.append(try #require(Data(base64Encoded: chunk)))
        }
        let raw = dir.sub("raw.sqlite")
        try data.write(to: URL(fileURLWithPath: raw))
        #expect(final.parameters["sizeBytes"]?.intValue == Int64(data.count))
        #expect(final.parameters["sha256"]?.stringValue == (try E2E.sha256sum(raw)))
        #expect(try TableDump.dumpFile(path: raw) == expected)
    }

    @Test func theFinalReplyOfAnExportComesAfterEveryRow() throws {
        // The rows go out from a blocking thread and the final reply from the request's task;
        // the final reply must never overtake the last rows (it did, once in ten or so, when
        // the rows' last write was not waited for).
        let dir = TestDirectory()
        let daemon = try Self.prepare(dir)
        let client = try daemon.client()
        for _ in 0..<50 {
            let replies = try client.call(#"{"method":"io.accountd.Export","parameters":{"account":"alice","format":"jsonl"},"more":true}"#)
            let final = try #require(replies.last)
            #expect(final.parameters["rows"]?.intValue == Int64(replies.count - 1))
            #expect(replies.dropLast().allSatisfy { $0.continues && $0.parameters["row"] != nil })
        }
    }

    @Test func jsonlExportHasOneReplyPerRowWithJSONTypes() throws {
        let dir = TestDirectory()
        let daemon = try Self.prepare(dir)
        let account = daemon.accountPath("alice")
        let replies = try daemon.client().call(#"{"method":"io.accountd.Export","parameters":{"account":"alice","format":"jsonl"},"more":true}"#)
        let final = try #require(replies.last)
        #expect(final.error == nil)
        #expect(!final.continues)
        let rows = replies.dropLast()
        #expect(rows.allSatisfy { $0.continues && $0.error == nil })

        var byTable: [String: [JSONValue]] = [:]
        for reply in rows {
            let table = try #require(reply.parameters["table"]?.stringValue)
            byTable[table, default: []].append(try #require(reply.parameters["row"]))
        }
        // The final counts match the rows sent and the file's own counts.
        let tables = try #require(final.parameters["tables"]?.objectValue)
        #expect(final.parameters["format"] == "jsonl")
        #expect(final.parameters["rows"]?.intValue == Int64(rows.count))
        #expect(Set(tables.map(\.0)) == Set(byTable.keys))
        for (table, count) in tables {
            #expect(count.intValue == Int64(byTable[table]?.count ?? 0), "table \(table)")
            let inFile = try E2E.sql(account, "SELECT count(*) FROM \"\(table)\";")
            #expect(count.intValue == Int64(inFile), "table \(table)")
        }
        #expect(Set(tables.map(\.0)).isSuperset(of: ["author", "book", "tag", "audit", "anything", "accountd_meta", "accountd_migrations"]))

        // Every storage class maps to its JSON type.
        let anything = Dictionary(
            uniqueKeysWithValues: (byTable["anything"] ?? []).map { ($0["k"]?.intValue ?? -1, $0["v"] ?? .null) })
        #expect(anything.count == 17)
        #expect(anything[1] == .int(Int64.max))
        #expect(anything[2] == .int(Int64.min))
        #expect(anything[3] == .double(0.1))
        #expect(anything[4] == .double(1e300))
        #expect(anything[5] == .double(1.0))
        #expect(anything[6] == .string("text"))
        #expect(anything[7] == ["$base64": "3q2+7w=="])
        #expect(anything[8] == .null)
        #expect(anything[9] == .double(Double.greatestFiniteMagnitude))
        #expect(anything[10] == .double(.leastNonzeroMagnitude))
        #expect(anything[13] == .double(0.30000000000000004))
        #expect(anything[14] == .int(0))
        #expect(anything[16] == .string(""))
        #expect(anything[17] == ["$base64": "AA=="])

        let authors = (byTable["author"] ?? []).sorted { ($0["id"]?.intValue ?? 0) < ($1["id"]?.intValue ?? 0) }
        #expect(authors.map { $0["name"] ?? .null } == Self.names.map { .string($0) })
        #expect(authors.map { $0["born"] ?? .null } == [.int(1970), .null, .int(-5)])

        let books = Dictionary(uniqueKeysWithValues: (byTable["book"] ?? []).map { ($0["id"]?.intValue ?? -1, $0) })
        #expect(books[1]?["cover"] == ["$base64": "AP8Q"])
        #expect(books[1]?["note"] == .null)
        #expect(books[2]?["cover"] == ["$base64": ""])
        #expect(books[2]?["price"] == .double(1e300))
        #expect(books[3]?["price"] == .double(1.0))
        #expect(books[Int64.max]?["cover"] == ["$base64": "AAAA"])
        #expect(books[Int64.max]?["title"] == "Max id")
        // Column order follows the table.
        #expect(books[1]?.objectValue?.map(\.0) == ["id", "author_id", "title", "price", "cover", "note"])
    }

    /// SQLite text may hold a NUL byte; the `sql` export must rebuild it (sqlite3's own .dump
    /// writes such text with char(0)).
    @Test func sqlExportKeepsTextWithANULByte() throws {
        let dir = TestDirectory()
        let daemon = try Self.prepare(dir)
        let account = daemon.accountPath("alice")
        try E2E.sql(account, "INSERT INTO anything(k, v) VALUES (100, 'a' || char(0) || 'b');")
        let dump = dir.sub("dump.sql")
        let result = try E2E.accountctl(["export", "alice", "--format", "sql", "-o", dump], socket: daemon.socket)
        #expect(result.status == 0, "\(result.stderr)")
        let rebuilt = dir.sub("new.db")
        let query = "SELECT k, typeof(v), hex(v) FROM anything ORDER BY k;"
        try E2E.sqlite3(rebuilt, String(contentsOfFile: dump, encoding: .utf8))
        let rebuiltRows = try E2E.sql(rebuilt, query)
        #expect(try rebuiltRows == E2E.sql(account, query))
    }

    /// Text with a CR LF line ending inside it must come back with its CR, and text that is
    /// not valid UTF-8 byte for byte, from the `sql` export.
    @Test(arguments: [
        ("'crlf' || char(13, 10) || 'end' || char(13, 10)", "text|63726C660D0A656E640D0A"),
        ("CAST(X'61FF62' AS TEXT)", "text|61FF62"),
    ])
    func sqlExportKeepsTextBytesExactly(value: String, typeAndHex: String) throws {
        let dir = TestDirectory()
        let daemon = try Self.prepare(dir)
        let account = daemon.accountPath("alice")
        try E2E.sql(account, "INSERT INTO anything(k, v) VALUES (101, \(value));")
        let dump = dir.sub("dump.sql")
        let result = try E2E.accountctl(["export", "alice", "--format", "sql", "-o", dump], socket: daemon.socket)
        #expect(result.status == 0, "\(result.stderr)")
        let rebuilt = dir.sub("new.db")
        try E2E.sqlite3(rebuilt, String(contentsOfFile: dump, encoding: .utf8))
        let query = "SELECT typeof(v), hex(v) FROM anything WHERE k = 101;"
        #expect(try E2E.sql(account, query) == typeAndHex)
        let rebuiltRow = try E2E.sql(rebuilt, query)
        #expect(rebuiltRow == typeAndHex)
    }
}
