import GRDB

/// Error text that is safe to show a client: SQLite's own message, never the SQL
/// statement GRDB adds to its descriptions ("... - while executing `INSERT ...`").
enum ErrorText {
    static func of(_ error: any Error) -> String {
        switch error {
        case let error as AccountdError:
            return error.message
        case let error as DatabaseError:
            let text = error.message ?? "SQLite error \(error.resultCode.rawValue)"
            switch error.resultCode.primaryResultCode {
            case .SQLITE_FULL: return "the disk is full"
            case .SQLITE_IOERR: return "\(text) (the disk may be full, or a file-size limit reached)"
            default: return text
            }
        default:
            return "\(error)"
        }
    }
}

extension ErrorText {
    /// What a SQLite error says about the disk rather than the file, e.g. "the disk is full";
    /// nil when it says nothing about the disk.
    ///
    /// `SQLITE_FULL` is a full disk. `SQLITE_IOERR` (any of its extended codes but a short
    /// read, which a truncated file gives) and `SQLITE_CANTOPEN` are the disk's doing when
    /// the filesystem holding `path` is full (SQLite reports a WAL index that cannot grow as
    /// an I/O error); any other I/O error is a failing disk or a file-size limit. Such an
    /// error never means that the file is corrupt.
    static func diskProblem(_ error: DatabaseError, near path: String) -> String? {
        let sqlite = error.message ?? "SQLite error \(error.extendedResultCode.rawValue)"
        switch error.resultCode.primaryResultCode {
        case .SQLITE_FULL:
            return "the disk is full"
        case .SQLITE_IOERR where error.extendedResultCode != .SQLITE_IOERR_SHORT_READ:
            if DiskSpace.isFull(at: path) { return "the disk is full (SQLite: \(sqlite))" }
            return "the disk failed or a file-size limit was reached (SQLite: \(sqlite))"
        case .SQLITE_CANTOPEN where DiskSpace.isFull(at: path):
            return "the disk is full (SQLite: \(sqlite))"
        default:
            return nil
        }
    }
}

extension AccountdError {
    /// What to tell a client about an error no code path named, when it is the disk's doing
    /// (SQLite's `SQLITE_FULL`, or `SQLITE_IOERR` but a short read): e.g. "the disk is full";
    /// nil for any other error.
    public static func diskText(of error: any Error) -> String? {
        guard let error = error as? DatabaseError else { return nil }
        switch error.resultCode.primaryResultCode {
        case .SQLITE_FULL: return ErrorText.of(error)
        case .SQLITE_IOERR where error.extendedResultCode != .SQLITE_IOERR_SHORT_READ: return ErrorText.of(error)
        default: return nil
        }
    }
}
