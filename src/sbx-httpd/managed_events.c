/* managed_events.c — sbx-run's events passed through to the store as they
 * are (its internal id replaced by the API's), named by their "event"
 * (a name the stream itself uses gets "run."), each at most
 * STORE_EVENT_MAX of JSON, at most MANAGED_EVENTS_MAX per execution. */
#include "managed_events.h"
#include "store.h"
#include "store_events.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The stream's own types: sbx-run's events never take them. */
static const char *const own_types[] = { "output", "state", "result", "end" };

/* Its SSE type: [A-Za-z0-9._:-], 1 to 64 characters; false otherwise. */
static bool type_of(const char *name, char *type, size_t size)
{
	size_t n = strlen(name);
	if (n == 0 || n > 64 ||
	    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") != n)
		return false;
	bool own = false;
	for (size_t i = 0; i < sizeof(own_types) / sizeof(own_types[0]); i++)
		own = own || !strcmp(name, own_types[i]);
	snprintf(type, size, "%s%s", own ? "run." : "", name);
	return true;
}

void managed_events_flush(struct managed_events *q, const char *id)
{
	if (!q->n)
		return;
	const char *types[MANAGED_EVENTS_BATCH];
	for (size_t i = 0; i < q->n; i++)
		types[i] = q->types[i];
	store_events_append(id, types, q->texts, q->n);
	for (size_t i = 0; i < q->n; i++)
		free(q->texts[i]);
	q->n = 0;
}

static void queue(struct managed_events *q, const char *id, const char *type, char *text)
{
	if (q->n == MANAGED_EVENTS_BATCH)
		managed_events_flush(q, id);
	snprintf(q->types[q->n], sizeof(q->types[q->n]), "%s", type);
	q->texts[q->n++] = text;
	q->kept++;
	q->bytes += (long long)strlen(text);
}

void managed_events_take(struct managed_events *q, const char *id, const char *name, json_t *event)
{
	char type[72];
	if (!strcmp(name, "finished"))
		return;
	if (!type_of(name, type, sizeof(type)) || q->kept >= MANAGED_EVENTS_MAX || q->bytes >= MANAGED_EVENT_BYTES_MAX) {
		q->dropped++;
		return;
	}
	json_t *copy = json_copy(event);
	json_object_set_new(copy, "executionId", json_string(id));
	json_object_del(copy, "seq"); /* a signed line's chain: not this stream's */
	json_object_del(copy, "prev");
	json_object_del(copy, "mac");
	char *text = json_dumps(copy, JSON_COMPACT);
	if (text && strlen(text) > STORE_EVENT_MAX) {
		json_t *omitted = json_pack("{s:s,s:O?,s:s,s:b,s:I}", "event", name, "at", json_object_get(copy, "at"),
					 "executionId", id, "omitted", 1, "bytes", (json_int_t)strlen(text));
		free(text);
		text = omitted ? json_dumps(omitted, JSON_COMPACT) : NULL;
		json_decref(omitted);
	}
	json_decref(copy);
	if (text)
		queue(q, id, type, text);
	else
		q->dropped++;
}

void managed_events_end(struct managed_events *q, const char *id)
{
	if (q->dropped) {
		char message[160];
		snprintf(message, sizeof(message), "%lld events past the stream's caps (%d events, %u MiB) were not kept",
			 q->dropped, MANAGED_EVENTS_MAX, MANAGED_EVENT_BYTES_MAX >> 20);
		json_t *w = json_pack("{s:s,s:s,s:s,s:s,s:I}", "event", "warning", "executionId", id, "code",
				      "events-dropped", "message", message, "dropped", (json_int_t)q->dropped);
		char *text = w ? json_dumps(w, JSON_COMPACT) : NULL;
		json_decref(w);
		if (text)
			queue(q, id, "warning", text);
	}
	managed_events_flush(q, id);
}
