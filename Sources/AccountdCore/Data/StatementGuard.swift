import CSQLiteConfig

/// What an app's statement may do, decided by SQLite's authorizer as each statement is
/// compiled (``SQLConnection`` installs it).
///
/// The schema belongs to the bundle and the file to the daemon, so both `Query` and
/// `Execute` refuse:
/// - DDL of any kind (`CREATE`, `DROP`, `ALTER`, virtual tables), `ANALYZE`, `REINDEX`;
/// - `ATTACH` and `DETACH`;
/// - `load_extension()` (extension loading is also off on the connection) and
///   `fts3_tokenizer()` (``refusedFunctions``);
/// - transaction control (`BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, `RELEASE`): the daemon
///   makes the transaction;
/// - every pragma but the read-only ones in ``readablePragmas`` (schema introspection, with
///   an argument) and ``queryablePragmas`` (read without an argument);
/// - a write to a table named `accountd_*` or `sqlite_*`, unless a trigger of the bundle
///   makes it.
///
/// `Query` is also refused anything that writes (`sqlite3_stmt_readonly`, checked after
/// compiling, and the connection is opened read-only).
struct StatementGuard {
    /// Which method the statement belongs to.
    enum Mode {
        case query
        case execute
        /// The daemon's own statements (`BEGIN IMMEDIATE`, `COMMIT`, the connection's pragmas): allowed.
        case daemon
    }

    /// Pragmas that only read the schema and take a table or index name.
    static let readablePragmas: Set<String> = [
        "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo", "foreign_key_list",
    ]
    /// Pragmas that may be read (never set: with an argument they are refused).
    static let queryablePragmas: Set<String> = readablePragmas.union([
        "user_version", "application_id", "schema_version", "data_version", "foreign_keys", "encoding", "page_size",
        "page_count", "freelist_count", "journal_mode", "collation_list", "database_list",
    ])

    /// Functions no app statement may call: `load_extension` loads a library, and
    /// `fts3_tokenizer` reads and replaces a pointer inside SQLite (its two-argument form
    /// works with a bound parameter whatever the connection's settings say).
    static let refusedFunctions: Set<String> = ["load_extension", "fts3_tokenizer"]

    /// Virtual tables no app statement may read: `sqlite_stmt` lists the statements of the
    /// connection, which the daemon shares between the callers of an account, with their text.
    static let refusedTables: Set<String> = ["sqlite_stmt"]

    static let schemaChange = "schema changes (CREATE, DROP, ALTER) are not allowed: the schema belongs to the bundle; ship a migration instead"

    var mode = Mode.query
    /// Why the statement being compiled was refused; nil while it is allowed.
    var refusal: String?
    /// Tables the statements compiled since the last ``reset()`` insert into, update or delete from.
    var writtenTables: Set<String> = []

    mutating func reset(_ mode: Mode) {
        self.mode = mode
        refusal = nil
    }

    /// The authorizer's answer for one action: `SQLITE_OK` or `SQLITE_DENY`.
    mutating func authorize(_ action: Int32, _ first: String?, _ second: String?, _ trigger: String?) -> Int32 {
        if mode == .daemon { return SQLITE_OK }
        switch action {
        case SQLITE_READ where Self.refusedTables.contains((first ?? "").lowercased()):
            return deny("reading \(first ?? "") is not allowed: it shows the daemon's connections, not the account's data")
        case SQLITE_SELECT, SQLITE_READ, SQLITE_RECURSIVE:
            return SQLITE_OK
        case SQLITE_FUNCTION:
            if let name = second?.lowercased(), Self.refusedFunctions.contains(name) {
                return deny("\(name)() is not allowed: it loads code or reaches inside SQLite")
            }
            return SQLITE_OK
        case SQLITE_INSERT, SQLITE_UPDATE, SQLITE_DELETE:
            let table = first ?? ""
            let lower = table.lowercased()
            if ["sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"].contains(lower) {
                // SQLite reports an UPDATE of the schema table when a table-valued pragma
                // (pragma_table_info) is first read; it refuses every UPDATE of it through SQL
                // itself (and SQLITE_DBCONFIG_DEFENSIVE too), so that one is let through. An
                // INSERT or DELETE is what CREATE and DROP report first, before the DDL itself.
                if action == SQLITE_UPDATE { return SQLITE_OK }
                return deny(Self.schemaChange)
            }
            if trigger == nil, lower.hasPrefix("accountd_") || lower.hasPrefix("sqlite_") {
                return deny("writing table \(table) is not allowed: accountd_* and sqlite_* tables belong to the daemon and SQLite")
            }
            if mode == .query { return deny("a Query only reads; use Execute to change rows") }
            writtenTables.insert(table)
            return SQLITE_OK
        case SQLITE_PRAGMA:
            let name = (first ?? "").lowercased()
            if second == nil ? Self.queryablePragmas.contains(name) : Self.readablePragmas.contains(name) { return SQLITE_OK }
            return deny("PRAGMA \(name)\(second == nil ? "" : " with an argument") is not allowed; only reading pragmas such as table_info(T) or user_version is")
        case SQLITE_TRANSACTION, SQLITE_SAVEPOINT:
            return deny("transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE) is not allowed: each Execute is one transaction the daemon makes")
        case SQLITE_ATTACH, SQLITE_DETACH:
            return deny("ATTACH and DETACH are not allowed: a statement reaches only its account's file")
        case SQLITE_ANALYZE, SQLITE_REINDEX:
            return deny("ANALYZE and REINDEX are not allowed: the file's maintenance belongs to the daemon")
        default:
            // Every CREATE, DROP and ALTER (tables, indexes, views, triggers, virtual tables):
            // this reason wins over the write to sqlite_master that a DROP reports first.
            refusal = nil
            return deny(Self.schemaChange)
        }
    }

    private mutating func deny(_ reason: String) -> Int32 {
        if refusal == nil { refusal = reason }
        return SQLITE_DENY
    }
}
