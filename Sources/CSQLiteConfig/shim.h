// SQLite's process-wide settings (sqlite3_config), which Swift cannot call: the function is variadic.
#include <sqlite3.h>

/// sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0): SQLITE_OK, or SQLITE_MISUSE once SQLite is initialised.
static inline int accountd_sqlite3_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
