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
    /// enforcement off and checks foreign keys itself before commit. Whatever else the
    /// script changes of the connection's settings is put back when it ends, failed or
    /// not (``ConnectionSettings``), so the next script starts where every account's does.
    static func run(_ script: SQLScript, file: String, in db: Database) throws(Failure) {
        let settings: ConnectionSettings
        do {
            settings = try ConnectionSettings.read(db)
        } catch {
            throw Failure(file: file, line: 1, sqliteMessage: ErrorText.of(error), resultCode: .SQLITE_ERROR)
        }
        do {
            try runStatements(script, file: file, in: db)
        } catch {
            try? settings.restore(db)
            throw error
        }
        do {
            try settings.restore(db)
        } catch {
            throw Failure(file: file, line: 1, sqliteMessage: "resetting the connection after the script: \(ErrorText.of(error))", resultCode: .SQLITE_ERROR)
        }
    }

    private static func runStatements(_ script: SQLScript, file: String, in db: Database) throws(Failure) {
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
