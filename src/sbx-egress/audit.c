/* audit.c — the gateway's audit log: one JSON line per decision, written
 * whole with one append so concurrent tunnels never interleave. */
#include "egress.h"
#include "../lib/clock.h"
#include "../lib/json.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void audit_write(struct gateway *g, const struct audit *a)
{
	if (g->log_fd < 0)
		return;
	char now[SBX_ISO_TIME_SIZE];
	sbx_iso_time(sbx_wall_ms(), now);
	json_t *line = json_pack("{s:s,s:s,s:o,s:o,s:i,s:s?,s:s,s:i,s:o,s:I,s:I,s:I}", "time", now, "revision",
				 g->policy.revision, "method", sbx_json_string_lossy(a->method), "host",
				 sbx_json_string_lossy(a->host), "port", a->port, "address",
				 *a->address ? a->address : NULL, "decision", a->decision, "status", a->status, "reason",
				 sbx_json_string_lossy(a->reason), "bytesUp", (json_int_t)a->up, "bytesDown",
				 (json_int_t)a->down, "durationMs", (json_int_t)(sbx_monotonic_ms() - a->started_ms));
	char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;
	json_decref(line);
	if (!text)
		return;
	size_t n = strlen(text);
	text[n] = '\n'; /* overwrites the terminator: written by length below */
	pthread_mutex_lock(&g->log_lock);
	ssize_t w = write(g->log_fd, text, n + 1);
	pthread_mutex_unlock(&g->log_lock);
	(void)w;
	free(text);
}
