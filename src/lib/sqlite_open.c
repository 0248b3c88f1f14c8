/* sqlite_open.c — opening a state database with WAL and synchronous=FULL. */
#include "sqlite_open.h"

#include <stdio.h>

int sbx_sqlite_open(const char *path, const char *schema, int busy_ms, int exit_code, sqlite3 **db,
		    struct sbx_error *e)
{
	char pragmas[128];
	snprintf(pragmas, sizeof(pragmas), "PRAGMA busy_timeout=%d; PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;",
		 busy_ms);
	if (sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL) !=
		    SQLITE_OK ||
	    sqlite3_exec(*db, pragmas, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(*db, schema, NULL, NULL, NULL) != SQLITE_OK) {
		sbx_error_set(e, exit_code, "store", "%s: %s", path, *db ? sqlite3_errmsg(*db) : "cannot open");
		return -1;
	}
	return 0;
}
