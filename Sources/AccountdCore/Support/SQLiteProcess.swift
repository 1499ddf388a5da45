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
    /// Once SQLite is initialised (a connection was opened) the setting can no longer change,
    /// and this does nothing: call it first.
    public static func configure() {
        _ = accountd_sqlite3_disable_memstatus()
    }
}
