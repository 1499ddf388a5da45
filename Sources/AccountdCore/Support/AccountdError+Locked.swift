import AccountdProtocol
import Foundation

extension AccountdError {
    /// Another process holds the account's file locked (SQLite's `SQLITE_BUSY` once the wait of
    /// `accounts.lockTimeoutSeconds` ran out, or a lock in `/proc/locks`): `AccountBusy`, in the
    /// words `Status ACCOUNT` uses for an `unavailable` account, naming how to find that process.
    /// Never `InternalError` or `SQLError`: the file is sound, and the same request succeeds once
    /// the other process lets go.
    ///
    /// - Parameter waited: how long this request waited for the lock; nil when it did not wait.
    public static func lockedByOtherProcess(_ account: AccountName, path: String, waited: Duration? = nil) -> AccountdError {
        let wait = waited.map { " (waited \(Self.seconds($0)) s, accounts.lockTimeoutSeconds)" } ?? ""
        return AccountdError(
            .accountBusy,
            "another process holds account \(account)'s file \(path) locked, so it cannot be used now\(wait); "
                + "find it with 'fuser \(path)' and try again when it lets go",
            account: account.rawValue, file: path)
    }

    /// `duration` in seconds, without a fraction when it has none.
    private static func seconds(_ duration: Duration) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }

    /// Whether a SQLite result code (primary or extended) is `SQLITE_BUSY`: a lock held by
    /// another connection that did not let go within the busy timeout.
    public static func isBusy(sqliteCode code: Int64) -> Bool { code & 0xFF == 5 }

    /// Whether a SQLite result code (primary or extended) says the file is damaged inside:
    /// `SQLITE_CORRUPT` or `SQLITE_NOTADB`.
    ///
    /// `SQLITE_CORRUPT_VTAB` (267) is not: a virtual table (FTS5's index of external content,
    /// say) found its own contents inconsistent with what the app's statements did to it, in
    /// a file that is sound; it is the statement's `SQLError` (hostile31e G2).
    public static func isDamaged(sqliteCode code: Int64) -> Bool {
        code != Self.corruptVirtualTable && (code & 0xFF == 11 || code & 0xFF == 26)
    }

    /// `SQLITE_CORRUPT_VTAB`.
    static let corruptVirtualTable: Int64 = 11 | (1 << 8)

    /// A file SQLite found damaged inside while a statement read it (`SQLITE_CORRUPT`,
    /// `SQLITE_NOTADB`, `sqlite` its words): `AccountCorrupt`, as an open that found it says.
    public static func damagedInside(_ account: AccountName, path: String, sqlite: String) -> AccountdError {
        corrupt(account, path: path, "cannot be read by SQLite: \(sqlite)")
    }
}
