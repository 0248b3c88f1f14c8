/* sqlite_open.h — a state database opened the one way sbx keeps state:
 * WAL journal, synchronous=FULL (what was said finished survives a power
 * cut), a busy timeout for concurrent processes, the schema applied. */
#ifndef SBX_SQLITE_OPEN_H
#define SBX_SQLITE_OPEN_H

#include "error.h"

#include <sqlite3.h>

/* 0, or -1 with an error naming path (exit_code on failure). */
int sbx_sqlite_open(const char *path, const char *schema, int busy_ms, int exit_code, sqlite3 **db,
		    struct sbx_error *e);

#endif
