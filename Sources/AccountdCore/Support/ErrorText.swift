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
