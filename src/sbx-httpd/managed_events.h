/* managed_events.h — sbx-run's event lines of a managed execution, kept
 * in the store for its event stream (sse.c): whatever their kind
 * (worker.*, denial, warning, ...), bounded per execution. */
#ifndef SBX_HTTPD_MANAGED_EVENTS_H
#define SBX_HTTPD_MANAGED_EVENTS_H

#include <jansson.h>
#include <stddef.h>

#define MANAGED_EVENTS_MAX 10000            /* events kept per execution */
#define MANAGED_EVENT_BYTES_MAX (16u << 20) /* their JSON in all */
#define MANAGED_EVENTS_BATCH 64             /* stored in one transaction at most */

struct managed_events {
	char *texts[MANAGED_EVENTS_BATCH];
	char types[MANAGED_EVENTS_BATCH][72];
	size_t n;                    /* waiting for the next flush */
	long long kept, bytes, dropped;
};

/* One event line (from the run's thread): queued for the store, or
 * counted as dropped past the caps. "finished" is not kept: the record's
 * result event follows it. */
void managed_events_take(struct managed_events *q, const char *id, const char *name, json_t *event);
/* Stores what is queued, in one transaction. */
void managed_events_flush(struct managed_events *q, const char *id);
/* At the end: a warning naming what was dropped, then the last flush. */
void managed_events_end(struct managed_events *q, const char *id);

#endif
