import AccountdProtocol
import CSQLiteConfig
import Foundation
import GRDBSQLite

/// Replays SQL text (the `sql` export) into a new database file, as `sqlite3 new.db < dump.sql`
/// would, on a connection that can reach nothing but that file.
///
/// The statements run one at a time through SQLite's C API, read from the mapped file, each
/// prepared from a window of the text just past its end (``prepare(_:at:end:hint:)``): SQLite
/// copies the whole window it is given when the text is not NUL-terminated, so a window to
/// the end of the file made a replay quadratic in the file's size (a 73 MB export ran for hours).
/// SQLite's authorizer refuses `ATTACH` and `DETACH` (and the limit on attached databases is
/// zero, which also stops `VACUUM INTO`), every pragma but those the export writes
/// (`foreign_keys`, `ignore_check_constraints`, `writable_schema`, `user_version`,
/// `application_id`), and extensions are off: a hostile file cannot make the daemon write
/// anywhere but the staged file, or read anything else. What it builds is then checked like
/// any account file (``AccountImport``).
enum SQLReplay {
    /// The pragmas the `sql` export writes, the only ones a replay runs.
    static let allowedPragmas: Set<String> = ["foreign_keys", "ignore_check_constraints", "writable_schema", "user_version", "application_id"]

    /// Runs the SQL in `text` against a new database at `path`.
    ///
    /// - Throws: `accountCorrupt` naming the statement's number and SQLite's message when
    ///   a statement fails, is refused, or the text ends inside a transaction; `storage` when
    ///   the database cannot be made. Unless `quotesContent` (the caller is root or the
    ///   daemon's user), the message gives only SQLite's kind of error, never its text, which
    ///   may quote the file (`near "…"`): the reply tells no caller what a file holds.
    ///
    /// `shouldStop` is asked every ``SQLiteInterrupt/progressSteps`` virtual machine steps and
    /// between statements (the daemon is stopping, the client went away): the replay then
    /// ends at once with `interrupted`, and the caller removes the staging file.
    static func run(
        _ text: UnsafeRawBufferPointer, into path: String, account: AccountName, source: String, quotesContent: Bool = true,
        shouldStop: @escaping @Sendable () -> Bool = { false }
    ) throws {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX
        guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK, let db = handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            throw AccountdError(.storage, "creating the import's staging database \(path) failed: \(message)", account: account.rawValue, file: path)
        }
        defer { sqlite3_close_v2(db) }
        _ = accountd_sqlite3_load_extension_off(db)
        _ = accountd_sqlite3_trusted_schema_off(db)
        sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0)
        // The staged file is synced once, whole, before it is linked into place; a large page
        // cache (64 MiB at most) keeps a big table's pages in memory while it is filled.
        _ = sqlite3_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -65536", nil, nil, nil)
        sqlite3_set_authorizer(
            db,
            { _, action, first, _, _, _ in
                switch action {
                case SQLITE_ATTACH, SQLITE_DETACH: return SQLITE_DENY
                case SQLITE_PRAGMA:
                    let name = first.map { String(cString: $0).lowercased() } ?? ""
                    return SQLReplay.allowedPragmas.contains(name) ? SQLITE_OK : SQLITE_DENY
                default: return SQLITE_OK
                }
            }, nil)
        let stopCheck = StopCheck(shouldStop)
        sqlite3_progress_handler(
            db, SQLiteInterrupt.progressSteps,
            { context in Unmanaged<StopCheck>.fromOpaque(context!).takeUnretainedValue().check() ? 1 : 0 },
            Unmanaged.passUnretained(stopCheck).toOpaque())
        defer { sqlite3_progress_handler(db, 0, nil, nil) }
        try withExtendedLifetime(stopCheck) { try replay(db, text, account: account, source: source, quotesContent: quotesContent, shouldStop: shouldStop) }
    }

    /// The `shouldStop` of a replay, for SQLite's progress handler.
    private final class StopCheck {
        let check: @Sendable () -> Bool
        init(_ check: @escaping @Sendable () -> Bool) { self.check = check }
    }

    /// The error of a replay stopped by its `shouldStop`.
    static func stopped(_ account: AccountName, _ source: String) -> AccountdError {
        AccountdError(
            .interrupted,
            "the import of \(source) as account \(account) was stopped (the daemon is stopping, or its client went away); nothing was imported, and its staging file is removed",
            account: account.rawValue, file: source)
    }

    /// The statements of `text`, one at a time, on `db` (see ``run(_:into:account:source:quotesContent:shouldStop:)``).
    private static func replay(
        _ db: OpaquePointer, _ text: UnsafeRawBufferPointer, account: AccountName, source: String, quotesContent: Bool,
        shouldStop: @Sendable () -> Bool
    ) throws {
        guard let base = text.baseAddress?.assumingMemoryBound(to: CChar.self) else {
            throw AccountImport.refusal(account, source, "holds no SQL")
        }
        var position = base
        let end = base + text.count
        var number = 0
        var hint = 4096
        while position < end {
            if shouldStop() { throw stopped(account, source) }
            var statement: OpaquePointer?
            var tail: UnsafePointer<CChar>?
            let prepared = prepare(db, at: position, end: end, hint: &hint, statement: &statement, tail: &tail)
            if prepared == SQLITE_INTERRUPT, shouldStop() { throw stopped(account, source) }
            guard prepared == SQLITE_OK else {
                throw failure(db, number: number + 1, account: account, source: source, quotesContent: quotesContent)
            }
            guard let statement else {
                // Only blanks or comments were left.
                guard let tail, tail > position else { break }
                position = tail
                continue
            }
            number += 1
            var code = sqlite3_step(statement)
            while code == SQLITE_ROW { code = sqlite3_step(statement) }
            sqlite3_finalize(statement)
            if code == SQLITE_INTERRUPT, shouldStop() { throw stopped(account, source) }
            guard code == SQLITE_DONE else { throw failure(db, number: number, account: account, source: source, quotesContent: quotesContent) }
            guard let tail, tail > position else { break }
            position = tail
        }
        guard number > 0 else { throw AccountImport.refusal(account, source, "holds no SQL statement") }
        guard sqlite3_get_autocommit(db) != 0 else {
            throw AccountImport.refusal(
                account, source, "ends inside a transaction (no COMMIT after statement \(number)): it was cut short; export the account again")
        }
    }

    /// Prepares the statement at `position` from the smallest window that surely holds it:
    /// `hint` bytes first (twice the longest statement so far, at least 4 KiB), doubled while
    /// the window may have cut the statement (SQLite stopped at its end, or failed there),
    /// up to the end of the text or 1 GiB (no statement of an export is that long). SQLite
    /// reads tokens from the start, so the first `;` it ends a statement at inside a window is
    /// the one it would end it at in the whole text.
    private static func prepare(
        _ db: OpaquePointer, at position: UnsafePointer<CChar>, end: UnsafePointer<CChar>, hint: inout Int,
        statement: inout OpaquePointer?, tail: inout UnsafePointer<CChar>?
    ) -> Int32 {
        let left = min(end - position, 1 << 30)
        var window = min(hint, left)
        while true {
            statement = nil
            tail = nil
            let code = sqlite3_prepare_v2(db, position, Int32(window), &statement, &tail)
            let reachedEnd = tail.map { $0 >= position + window } ?? true
            guard window < left, code != SQLITE_OK || reachedEnd else {
                if let tail { hint = max(hint, 2 * (tail - position)) }
                return code
            }
            sqlite3_finalize(statement)
            window = min(2 * window, left)
        }
    }

    private static func failure(_ db: OpaquePointer, number: Int, account: AccountName, source: String, quotesContent: Bool) -> AccountdError {
        let message =
            quotesContent
            ? String(cString: sqlite3_errmsg(db))
            : "SQLite: " + String(cString: sqlite3_errstr(sqlite3_extended_errcode(db))) + "; its text is shown only to root or the daemon's user"
        return AccountImport.refusal(
            account, source,
            "is not an sql export accountd can replay: statement \(number) fails (\(message)); only the SQL an 'accountctl export --format sql' writes is taken")
    }
}
