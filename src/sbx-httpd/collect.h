/* collect.h — the collector thread: retention of managed executions and
 * collection of the remote snapshot store, off every request's path. */
#ifndef SBX_HTTPD_COLLECT_H
#define SBX_HTTPD_COLLECT_H

#include <jansson.h>

enum collect_what { COLLECT_EXECUTIONS, COLLECT_SNAPSHOTS };

/* Starts the thread; its first pass runs at once. */
void collect_start(void);
/* Asks for a pass soon: an execution finished, a snapshot was made. */
void collect_kick(enum collect_what what);
/* /health's "retention": the settings, the bytes held, what was collected. */
json_t *collect_health(void);

#endif
