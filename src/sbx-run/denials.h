/* denials.h — every refusal a run met, as data: one record per kind and
 * target ({kind, what, count, first, policy, remedy, ...}), a "denial"
 * event when one first happens and at most one per record a second after,
 * and the whole list in the result. Fixed memory: RUN_DENIALS_MAX records. */
#ifndef SBX_RUN_DENIALS_H
#define SBX_RUN_DENIALS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define RUN_DENIALS_MAX 64           /* records; later targets count in "other" */
#define RUN_DENIAL_INTERVAL_MS 1000  /* events of one record at most this often */

struct run_denial {
	char kind[16];     /* "seccomp", "egress", "limit" */
	char what[160];    /* the syscall, host:port, or limit */
	char policy[64];   /* the profile, allowlist revision or knob that refused */
	char remedy[256];
	json_t *detail;    /* more fields (limit, knob, reason, ...), owned; NULL none */
	uint64_t count, reported;   /* reported: the count the last event carried */
	long long first_ms, event_ms; /* wall clock of the first; mono of the last event */
};

struct run_denials {
	struct run_denial d[RUN_DENIALS_MAX];
	size_t n;
	uint64_t overflow;  /* refusals of targets past RUN_DENIALS_MAX */
};

struct run;

/* Counts n refusals of (kind, what); detail (stolen, may be NULL) is kept
 * from the first. An event goes out now for a new record, else when its
 * interval has passed. */
void run_denial_note(struct run *r, const char *kind, const char *what, uint64_t n, const char *policy,
		     const char *remedy, json_t *detail);
/* Sends the events the interval held back (all of them when final). */
void run_denials_flush(struct run *r, bool final);
/* The result's "denials": every record, in order of first refusal. */
json_t *run_denials_json(const struct run_denials *d);
void run_denials_free(struct run_denials *d);

#endif
