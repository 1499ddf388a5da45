import AccountdTestSupport
import Foundation
import GRDB
import Testing

@testable import AccountdCore

/// The bundle check cuts a script into statements exactly where SQLite does: generated
/// scripts full of strings, comments, hex literals and quoted names, each cut by
/// `SQLScript` and by SQLite itself (`sqlite3_prepare_v2`'s tail), must agree.
@Suite struct StatementSplitTests {
    /// Seeds; `ACCOUNTD_SPLIT_SEEDS=N` adds N more.
    static let seeds: [UInt64] = {
        let extra = Int(ProcessInfo.processInfo.environment["ACCOUNTD_SPLIT_SEEDS"] ?? "") ?? 0
        return [1, 2, 3, 4] + (0..<UInt64(max(0, extra))).map { 1000 + $0 }
    }()

    /// Pieces of an expression list, each valid inside `SELECT ...`.
    static let items = [
        "1", "'a;b'", "'it''s; fine'", "0xFE", "0xfe-1", "1e-5", "1.5e+3", ".5", "x'00ff'", "X''",
        "\"q;uoted\"", "[brack;et]", "`back;tick`", "'--not a comment;'", "'/* nor this; */'", "-2", "3-1",
    ]
    /// What may stand between two items: plain separators, and comments holding `;` and quotes.
    static let gaps = [
        ", ", ",\n", " , ", "-- don't; stop\n, ", ", /* it's ; here */ ", ",/*;*/", " -- \"; '\n,", "-- x\r\n,",
    ]

    static func script(_ random: inout SeededRandom) -> String {
        var text = ""
        for _ in 0..<(1 + random.below(6)) {
            text += "SELECT "
            for index in 0..<(1 + random.below(5)) {
                if index > 0 { text += gaps[random.below(gaps.count)] }
                text += items[random.below(items.count)]
            }
            text += " FROM t"
            // A comment may hold a semicolon right before the real one.
            text += ["", " -- ;'\n", " /* ; */"][random.below(3)] + ";" + ["\n", " ", "\n\n", "\r\n"][random.below(4)]
        }
        return text
    }

    /// A statement's text without the white space around it and its closing semicolon
    /// (GRDB keeps a prepared statement's text without it).
    static func trimmed(_ text: String) -> String {
        var text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasSuffix(";") { text.removeLast() }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The statements as SQLite cuts them: the text of each prepared statement.
    static func sqliteCut(_ text: String, _ db: Database) throws -> [String] {
        var cuts: [String] = []
        let statements = try db.allStatements(sql: text)
        while let statement = try statements.next() {
            cuts.append(trimmed(statement.sql))
        }
        return cuts
    }

    @Test(arguments: seeds) func scriptsAreCutWhereSQLiteCutsThem(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let queue = try DatabaseQueue()
        try queue.inDatabase { db in
            try db.execute(sql: #"CREATE TABLE t("q;uoted", "brack;et", "back;tick"); INSERT INTO t VALUES (1, 2, 3)"#)
            for _ in 0..<300 {
                let text = Self.script(&random)
                let ours = SQLScript(text).statements.map { Self.trimmed($0.text) }
                let theirs = try Self.sqliteCut(text, db)
                #expect(ours == theirs, "script:\n\(text)")
                if ours != theirs { return }
            }
        }
    }
}
