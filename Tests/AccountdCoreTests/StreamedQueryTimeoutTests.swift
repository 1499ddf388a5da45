import AccountdProtocol
import AccountdTestSupport
import Foundation
import GRDB
import Testing

@testable import AccountdCore

/// A streamed `Query`'s timeout (hostile31c F10): only SQLite's stepping counts against
/// `limits.queryTimeoutMs`, not the time the daemon spends encoding the rows for the reply
/// (20 values of 16 MB, each read fast, took longer than the limit to encode and ended in
/// `QueryTimeout` after 7-11 rows).
@Suite struct StreamedQueryTimeoutTests {
    /// A file with table `t` of `rows` rows.
    static func file(_ dir: borrowing TestDirectory, rows: Int) throws -> String {
        let path = dir.sub("a.sqlite")
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (a)")
            for row in 0..<rows { try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: [row]) }
        }
        try queue.close()
        return path
    }

    // Each row's step runs a few hundred VM instructions, so the deadline is checked on each.
    static let sql = "SELECT a, (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 200) SELECT count(*) FROM r) FROM t"

    @Test func encodingTheRowsDoesNotCountAgainstTheTimeout() throws {
        let dir = TestDirectory()
        let connection = try SQLConnection(path: try Self.file(dir, rows: 10), readOnly: true)
        defer { connection.close() }
        let cursor = try connection.pagedQuery(SQLStatement(sql: Self.sql), timeout: .milliseconds(300), stop: nil)
        var rows = 0
        // One page whose rows take 80 ms each to "encode": 800 ms in all, well past the 300 ms.
        let ended = try cursor.page { _ in
            usleep(80_000)
            rows += 1
            return false
        }
        #expect(ended)
        #expect(rows == 10)
    }

    @Test func steppingStillCounts() throws {
        let dir = TestDirectory()
        let connection = try SQLConnection(path: try Self.file(dir, rows: 1), readOnly: true)
        defer { connection.close() }
        let slow = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 100000000) SELECT count(*) FROM r"
        let cursor = try connection.pagedQuery(SQLStatement(sql: slow), timeout: .milliseconds(200), stop: nil)
        let started = Date()
        let error = #expect(throws: ProtocolError.self) { _ = try cursor.page { _ in false } }
        #expect(error?.name == .queryTimeout, "\(String(describing: error))")
        #expect(Date().timeIntervalSince(started) < 5)
    }
}
