/* denials.c — the run's refusal records and their coalesced events: the
 * first refusal of a target is an event at once, later ones wait out the
 * interval and go as one event with the count so far. */
#include "denials.h"
#include "run.h"
#include "../lib/clock.h"

#include <stdio.h>
#include <string.h>

static json_t *record(const struct run_denial *d)
{
	char first[SBX_ISO_TIME_SIZE];
	sbx_iso_time(d->first_ms, first);
	json_t *o = json_pack("{s:s,s:s,s:I,s:s,s:s,s:s}", "kind", d->kind, "what", d->what, "count",
			      (json_int_t)d->count, "first", first, "policy", d->policy, "remedy", d->remedy);
	if (o && d->detail)
		json_object_update_missing(o, d->detail);
	return o;
}

static void send_event(struct run *r, struct run_denial *d, long long now)
{
	json_t *o = record(d);
	if (o)
		json_object_set_new(o, "new", json_integer((json_int_t)(d->count - d->reported)));
	d->reported = d->count;
	d->event_ms = now;
	run_event("denial", r, json_pack("{s:o}", "denial", o ? o : json_null()));
}

static struct run_denial *find(struct run_denials *ds, const char *kind, const char *what)
{
	for (size_t i = 0; i < ds->n; i++)
		if (!strcmp(ds->d[i].kind, kind) && !strcmp(ds->d[i].what, what))
			return &ds->d[i];
	return NULL;
}

void run_denial_note(struct run *r, const char *kind, const char *what, uint64_t n, const char *policy,
		     const char *remedy, json_t *detail)
{
	struct run_denials *ds = &r->denials;
	long long now = sbx_mono_ms();
	struct run_denial *d = find(ds, kind, what);

	if (!d && ds->n == RUN_DENIALS_MAX) {
		ds->overflow += n; /* in the result as one record of its own */
		json_decref(detail);
		return;
	}
	if (!d) {
		d = &ds->d[ds->n++];
		memset(d, 0, sizeof(*d));
		snprintf(d->kind, sizeof(d->kind), "%s", kind);
		snprintf(d->what, sizeof(d->what), "%s", what);
		snprintf(d->policy, sizeof(d->policy), "%s", policy ? policy : "");
		snprintf(d->remedy, sizeof(d->remedy), "%s", remedy ? remedy : "");
		d->detail = detail;
		detail = NULL;
		d->first_ms = run_now_ms();
		d->count = n;
		send_event(r, d, now);
	} else {
		d->count += n;
		if (now - d->event_ms >= RUN_DENIAL_INTERVAL_MS)
			send_event(r, d, now);
	}
	json_decref(detail);
}

void run_denials_flush(struct run *r, bool final)
{
	long long now = sbx_mono_ms();
	for (size_t i = 0; i < r->denials.n; i++) {
		struct run_denial *d = &r->denials.d[i];
		if (d->count > d->reported && (final || now - d->event_ms >= RUN_DENIAL_INTERVAL_MS))
			send_event(r, d, now);
	}
}

json_t *run_denials_json(const struct run_denials *ds)
{
	json_t *a = json_array();
	for (size_t i = 0; i < ds->n; i++)
		json_array_append_new(a, record(&ds->d[i]));
	if (ds->overflow)
		json_array_append_new(a, json_pack("{s:s,s:s,s:I,s:s}", "kind", "other", "what", "(targets past the record cap)",
						   "count", (json_int_t)ds->overflow, "remedy",
						   "the run met refusals of more than 64 targets: see the events"));
	return a;
}

void run_denials_free(struct run_denials *ds)
{
	for (size_t i = 0; i < ds->n; i++)
		json_decref(ds->d[i].detail);
	ds->n = 0;
}
