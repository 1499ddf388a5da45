import AccountdProtocol
import AccountdTestSupport
import Foundation
import GRDB
import Testing

/// Every export rebuilds bit for bit over generated data: random doubles (every bit
/// pattern, not only the everyday ones), names with quotes, spaces and unicode, and a
/// bundle's own table whose name begins with `_litestream_`.
@Suite struct ExportExactnessTests {
    static let steps = [
        """
        CREATE TABLE reals (id INTEGER PRIMARY KEY, v REAL, w ANY);
        CREATE TABLE "we""ird table" ("co""l" REAL, "ü x" TEXT, [br]acket INTEGER);
        CREATE INDEX "we""ird index" ON "we""ird table"("co""l");
        CREATE TABLE _litestream_notes (id INTEGER PRIMARY KEY, body TEXT);
        CREATE TABLE counted (id INTEGER PRIMARY KEY AUTOINCREMENT, n INTEGER CHECK (n < 10));
        CREATE INDEX counted_n ON counted(n);
        """
    ]

    /// Seeds for the generated doubles; `ACCOUNTD_EXPORT_SEEDS` runs more.
    static let seeds: [UInt64] = {
        let extra = Int(ProcessInfo.processInfo.environment["ACCOUNTD_EXPORT_SEEDS"] ?? "") ?? 0
        return [1, 2] + (0..<UInt64(max(0, extra))).map { 100 + $0 }
    }()

    /// A daemon with alice, whose tables hold `count` random doubles of every kind from `seed`,
    /// written through GRDB (bound, so the file holds exactly those bits).
    static func prepare(_ dir: borrowing TestDirectory, seed: UInt64, count: Int = 4000) throws -> DaemonProcess {
        let daemon = try E2E.daemonWithAlice(dir, steps: steps, fill: "SELECT 1;")
        var random = SeededRandom(seed: seed)
        let queue = try DatabaseQueue(path: daemon.accountPath("alice"))
        defer { try? queue.close() }
        try queue.write { db in
            for id in 0..<count {
                // Half any bit pattern (tiny, huge, subnormal), half everyday decimals.
                var value = Double(bitPattern: random.next())
                if id % 2 == 1 { value = Double(random.int(in: -10_000_000...10_000_000)) / Double([10, 100, 1000, 1e6, 7][random.below(5)]) }
                if !value.isFinite { value = -0.0 }
                try db.execute(sql: "INSERT INTO reals(id, v, w) VALUES (?, ?, ?)", arguments: [id, value, value * 3.0])
            }
            try db.execute(sql: #"INSERT INTO "we""ird table" VALUES (54.24511312402662, 'x"y', 1), (1e-310, '', NULL)"#)
            try db.execute(sql: "INSERT INTO _litestream_notes(body) VALUES ('the bundle''s own note')")
        }
        return daemon
    }

    @Test(arguments: seeds) func sqlExportRebuildsEveryDoubleAndNameExactly(seed: UInt64) throws {
        let dir = TestDirectory()
        let daemon = try Self.prepare(dir, seed: seed)
        let account = daemon.accountPath("alice")
        let dump = dir.sub("dump.sql")
        let result = try E2E.accountctl(["export", "alice", "--format", "sql", "-o", dump], socket: daemon.socket)
        try #require(result.status == 0, "\(result.stderr)")
        let rebuilt = dir.sub("new.db")
        try E2E.sqlite3(rebuilt, try String(contentsOfFile: dump, encoding: .utf8))
        let expected = try TableDump.dumpFile(path: account)
        #expect(expected["reals"]?.count == 4000)
        #expect(expected["_litestream_notes"]?.count == 1)
        let got = try TableDump.dumpFile(path: rebuilt)
        for (table, rows) in expected {
            let missing = Set(rows).subtracting(got[table] ?? [])
            #expect(missing.isEmpty, "\(table): \(missing.count) rows changed, e.g. \(Array(missing.prefix(3)))")
        }
        #expect(Set(got.keys) == Set(expected.keys))
        // typeof as well as value, spelled out by SQLite itself.
        let types = "SELECT typeof(v), typeof(w), count(*) FROM reals GROUP BY 1, 2 ORDER BY 1, 2;"
        #expect(try E2E.sql(rebuilt, types) == E2E.sql(account, types))
        let master = #"SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name;"#
        #expect(try E2E.sql(rebuilt, master) == E2E.sql(account, master))
    }

    @Test func jsonlAndSQLiteExportsCarryOddNamesAndBundleTablesWithTheLitestreamPrefix() throws {
        let dir = TestDirectory()
        let daemon = try Self.prepare(dir, seed: 3, count: 10)
        let jsonl = try E2E.accountctl(["export", "alice", "--format", "jsonl"], socket: daemon.socket)
        try #require(jsonl.status == 0, "\(jsonl.stderr)")
        let rows = try E2E.jsonLines(jsonl.stdout).compactMap { $0["table"]?.stringValue }
        #expect(rows.filter { $0 == #"we"ird table"# }.count == 2)
        #expect(rows.filter { $0 == "_litestream_notes" }.count == 1)

        let copy = dir.sub("copy.sqlite")
        let sqlite = try E2E.accountctl(["export", "alice", "--format", "sqlite", "-o", copy], socket: daemon.socket)
        try #require(sqlite.status == 0, "\(sqlite.stderr)")
        #expect(try E2E.sql(copy, "SELECT body FROM _litestream_notes;") == "the bundle's own note")
    }

    @Test func verifyReportsADroppedBundleTableWithTheLitestreamPrefix() throws {
        let dir = TestDirectory()
        let daemon = try Self.prepare(dir, seed: 4, count: 1)
        let client = try daemon.client()
        #expect(try client.callOne("verify alice").parameters["healthy"] == true)
        try E2E.sql(daemon.accountPath("alice"), "DROP TABLE _litestream_notes;")
        #expect(try client.callOne("verify alice").parameters["healthy"] == false)
    }

    /// The daemon's peak resident memory (`VmHWM`), in KiB.
    static func peakKiB(_ pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    /// A 24 MiB blob goes out as SQL in pieces: the daemon's peak memory grows by far less
    /// than the several copies of the whole hex text it once held, and the blob rebuilds.
    @Test func aLargeBlobIsExportedAsSQLInBoundedMemory() throws {
        let dir = TestDirectory()
        let daemon = try Self.prepare(dir, seed: 5, count: 1)
        var random = SeededRandom(seed: 9)
        let blob = Data(random.bytes(24 << 20))
        let queue = try DatabaseQueue(path: daemon.accountPath("alice"))
        try queue.write { try $0.execute(sql: "INSERT INTO reals (id, w) VALUES (-1, ?)", arguments: [blob]) }
        try queue.close()
        let pid = daemon.process.processIdentifier
        let before = try #require(Hostile.rssKiB(pid))
        let dump = dir.sub("dump.sql")
        let result = try E2E.accountctl(["export", "alice", "--format", "sql", "-o", dump], socket: daemon.socket)
        try #require(result.status == 0, "\(result.stderr)")
        let peak = try #require(Self.peakKiB(pid))
        #expect(peak - before < 80 * 1024, "peak \(peak) KiB against \(before) KiB before the export")
        let rebuilt = dir.sub("new.db")
        try E2E.sqlite3(rebuilt, try String(contentsOfFile: dump, encoding: .utf8))
        let check = "SELECT length(w), hex(substr(w, 1000000, 16)) FROM reals WHERE id = -1;"
        #expect(try E2E.sql(rebuilt, check) == E2E.sql(daemon.accountPath("alice"), check))
    }

    /// What jsonl and sql once lost: infinities and text that is not UTF-8 (jsonl), a row an
    /// existing CHECK refuses (sql), and SQLite's counters and statistics (both).
    @Test func everyExportKeepsInfinitiesBadTextCheckFailuresCountersAndStatistics() throws {
        let dir = TestDirectory()
        let daemon = try Self.prepare(dir, seed: 6, count: 0)
        let account = daemon.accountPath("alice")
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA ignore_check_constraints = ON") }
        let queue = try DatabaseQueue(path: account, configuration: configuration)
        try queue.write { db in
            try db.execute(sql: "INSERT INTO reals (id, v, w) VALUES (1, 9e999, -9e999), (2, 1.5, CAST(X'61FF62' AS TEXT))")
            try db.execute(sql: "INSERT INTO counted (n) VALUES (1), (2), (50); DELETE FROM counted WHERE n = 2; ANALYZE;")
        }
        try queue.close()

        let jsonl = try E2E.accountctl(["export", "alice", "--format", "jsonl"], socket: daemon.socket)
        try #require(jsonl.status == 0, "\(jsonl.stderr)")
        let lines = try E2E.jsonLines(jsonl.stdout)
        let reals = lines.filter { $0["table"] == "reals" }
        #expect(reals.first { $0["row"]?["id"] == 1 }?["row"]?["v"]?["$real"] == "Infinity", "\(reals)")
        #expect(reals.first { $0["row"]?["id"] == 1 }?["row"]?["w"]?["$real"] == "-Infinity")
        #expect(reals.first { $0["row"]?["id"] == 2 }?["row"]?["w"]?["$textBase64"] == "Yf9i")
        #expect(lines.contains { $0["table"] == "sqlite_sequence" && $0["row"]?["seq"] == 3 })
        #expect(lines.contains { $0["table"] == "sqlite_stat1" })

        let dump = dir.sub("dump.sql")
        let sql = try E2E.accountctl(["export", "alice", "--format", "sql", "-o", dump], socket: daemon.socket)
        try #require(sql.status == 0, "\(sql.stderr)")
        let rebuilt = dir.sub("new.db")
        try E2E.sqlite3(rebuilt, try String(contentsOfFile: dump, encoding: .utf8))
        for check in [
            "SELECT id, n FROM counted ORDER BY id;", "SELECT name, seq FROM sqlite_sequence ORDER BY name;",
            "SELECT tbl, idx, stat FROM sqlite_stat1 ORDER BY tbl, idx;", "SELECT id, quote(v), quote(w), typeof(w) FROM reals ORDER BY id;",
        ] {
            #expect(try E2E.sql(rebuilt, check) == E2E.sql(account, check), "\(check)")
        }
        #expect(try E2E.sql(rebuilt, "SELECT count(*) FROM counted WHERE n = 50;") == "1")
    }
}
