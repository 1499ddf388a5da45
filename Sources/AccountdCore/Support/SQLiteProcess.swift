import CSQLiteConfig

/// SQLite's settings for the whole process, made once, before the first connection opens.
public enum SQLiteProcess {
    /// Turns off SQLite's memory statistics (`SQLITE_CONFIG_MEMSTATUS`).
    ///
    /// Debian's libsqlite3 keeps them on, and then every allocation SQLite makes, on any
    /// connection, takes one mutex shared by the whole process to count it. The daemon runs
    /// many connections at once on its blocking pool (a fleet `Migrate` runs one per account
    /// in flight), and they queue on that mutex: with the statistics off, `Migrate {all}` takes
    /// 10–15% less time and CPU (docs/PERFORMANCE.md). accountd reads none of the statistics.
    ///
    /// - Returns: false when SQLite was already initialised, and the setting could not change.
    @discardableResult
    public static func configure() -> Bool {
        accountd_sqlite3_disable_memstatus() == 0
    }
}
