import GRDB

/// Runs a bundle script statement by statement, so that a failure names its line.
enum ScriptRunner {
    /// A statement that SQLite refused.
    struct Failure: Error {
        /// The bundle-relative file, e.g. `migrations/0007_rebuild_user.sql`.
        var file: String
        var line: Int
        /// SQLite's own message, e.g. `no such column: nick`.
        var sqliteMessage: String
        /// The SQLite result code.
        var resultCode: ResultCode

        var location: String { "\(file) line \(line)" }
    }

    /// Executes every top-level statement of `script` in order.
    ///
    /// `PRAGMA foreign_keys` statements are skipped: accountd always migrates with
    /// enforcement off and checks foreign keys itself before commit.
    static func run(_ script: SQLScript, file: String, in db: Database) throws(Failure) {
        for statement in script.statements {
            if statement.pragmaName == "foreign_keys" { continue }
            do {
                try db.execute(sql: statement.text)
            } catch let error as DatabaseError {
                throw Failure(
                    file: file, line: statement.line, sqliteMessage: ErrorText.of(error),
                    resultCode: error.resultCode)
            } catch {
                throw Failure(file: file, line: statement.line, sqliteMessage: ErrorText.of(error), resultCode: .SQLITE_ERROR)
            }
        }
    }
}
