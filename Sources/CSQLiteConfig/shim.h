// SQLite's process-wide settings (sqlite3_config), which Swift cannot call: the function is variadic.
#include <sqlite3.h>

/// sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0): SQLITE_OK, or SQLITE_MISUSE once SQLite is initialised.
static inline int accountd_sqlite3_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

// Per-connection settings (sqlite3_db_config), variadic too.

/// SQLITE_DBCONFIG_DEFENSIVE on: no writes to the schema tables, no PRAGMA writable_schema,
/// journal_mode=OFF or schema_version, no corrupting the file through SQL (sqlite.org/c3ref/c_dbconfig_defensive.html).
static inline int accountd_sqlite3_defensive_on(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)0);
}

/// SQLITE_DBCONFIG_TRUSTED_SCHEMA off: SQL functions in the schema (views, triggers,
/// defaults) may not have side effects; the same as PRAGMA trusted_schema=OFF.
static inline int accountd_sqlite3_trusted_schema_off(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)0);
}

/// SQLITE_DBCONFIG_TRUSTED_SCHEMA on: the schema's triggers and views may use virtual tables
/// that are not innocuous (FTS5, R*Tree), as the bundle's full-text triggers do.
static inline int accountd_sqlite3_trusted_schema_on(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 1, (int *)0);
}

/// SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION off: neither the C API nor the SQL function
/// load_extension() may load a shared library.
static inline int accountd_sqlite3_load_extension_off(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, (int *)0);
}

/// SQLITE_TRANSIENT, which Swift cannot import (a cast of -1 to a function pointer).
static inline sqlite3_destructor_type accountd_sqlite3_transient(void) {
    return SQLITE_TRANSIENT;
}
