/* metrics.h — sbx-httpd's counters for GET /metrics: fixed arrays of
 * atomics (request threads and poll threads count at once), each label
 * set a small enum, counted with one call where the thing happens. */
#ifndef SBX_HTTPD_METRICS_H
#define SBX_HTTPD_METRICS_H

#include "../lib/error.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

enum metrics_mode { METRICS_SYNC, METRICS_MANAGED, METRICS_MODES };
enum metrics_outcome { METRICS_COMPLETED, METRICS_FAILED, METRICS_CANCELLED, METRICS_OUTCOMES };
/* failure_class: "none" (null), the exit table's classes, "other". */
#define METRICS_CLASSES 10
enum metrics_denial { METRICS_DENIAL_SECCOMP, METRICS_DENIAL_EGRESS, METRICS_DENIAL_LIMIT, METRICS_DENIAL_OTHER,
		      METRICS_DENIAL_KINDS };
enum metrics_refusal {
	METRICS_REFUSED_MAX_CONNECTIONS, /* past SCIENCE_AGENT_MAX_CONNECTIONS: 503 */
	METRICS_REFUSED_MAX_REQUESTS,    /* past SCIENCE_AGENT_MAX_REQUESTS: 503 */
	METRICS_REFUSED_NO_THREAD,       /* no thread for the request: 503 */
	METRICS_REFUSED_UNAUTHORIZED,    /* no valid bearer: 401 */
	METRICS_REFUSED_BAD_SIGNATURE,   /* a signed endpoint's signature failed: 401 */
	METRICS_REFUSED_HEAD_DEADLINE,   /* no whole head within CONNECTION_IDLE_S: cut */
	METRICS_REFUSED_SLOW_BODY,       /* a body trickling under the minimum rate: cut */
	METRICS_REFUSALS
};
/* The stages sbx-httpd calls (and "other"). */
#define METRICS_PROGRAMS 8
enum metrics_stage_error { METRICS_STAGE_REFUSED, METRICS_STAGE_FAILED, METRICS_STAGE_TIMEOUT, METRICS_STAGE_ERRORS };
enum metrics_counter {
	METRICS_CONNECTIONS,             /* connections the API listener accepted */
	METRICS_UPLOAD_RECEIVED_BYTES,   /* upload body bytes staged */
	METRICS_UPLOAD_STORED_BYTES,     /* bytes of uploads published into a remote workspace */
	METRICS_UPLOADS_STORED,
	METRICS_EGRESS_REFUSED,          /* the count of results' egress denials */
	METRICS_RUN_STARTS_WARM,         /* an sbx-run taken from the standby pool */
	METRICS_RUN_STARTS_COLD,
	METRICS_STORE_RECORDS_COLLECTED, /* managed records removed whole */
	METRICS_STORE_LOGS_COLLECTED,    /* managed records whose logs alone were removed */
	METRICS_STORE_BYTES_COLLECTED,   /* their log and result bytes */
	METRICS_STORE_PASSES,
	METRICS_SNAPSHOT_MANIFESTS_COLLECTED,
	METRICS_SNAPSHOT_OBJECTS_COLLECTED,
	METRICS_SNAPSHOT_PASSES,
	METRICS_COUNTERS
};
enum metrics_gauge {
	METRICS_CONNECTIONS_OPEN,
	METRICS_REQUESTS_IN_FLIGHT,
	METRICS_EXECUTIONS_QUEUED,
	METRICS_EXECUTIONS_RUNNING,
	METRICS_SANDBOXES_ACTIVE,        /* sbx-run said "started" and has not ended */
	METRICS_GAUGES
};

/* Histogram bounds in ms (then +Inf); observations are kept per bucket,
 * the exposition adds them up. */
#define METRICS_BUCKETS 18
extern const long long metrics_bucket_ms[METRICS_BUCKETS];
struct metrics_histogram {
	atomic_ullong buckets[METRICS_BUCKETS + 1];
	atomic_ullong sum_ms;
};

struct metrics {
	atomic_ullong executions[METRICS_MODES][METRICS_OUTCOMES][METRICS_CLASSES];
	struct metrics_histogram duration[METRICS_MODES], queue_wait[METRICS_MODES];
	atomic_ullong denials[METRICS_DENIAL_KINDS];
	atomic_ullong refusals[METRICS_REFUSALS];
	atomic_ullong responses[600];    /* by HTTP status */
	atomic_ullong stage_calls[METRICS_PROGRAMS];
	atomic_ullong stage_errors[METRICS_PROGRAMS][METRICS_STAGE_ERRORS];
	atomic_ullong counters[METRICS_COUNTERS];
	atomic_llong gauges[METRICS_GAUGES];
	long long start_wall_ms;
};
extern struct metrics g_metrics;

/* Label values, in enum order. */
extern const char *const metrics_mode_names[METRICS_MODES];
extern const char *const metrics_outcome_names[METRICS_OUTCOMES];
extern const char *const metrics_class_names[METRICS_CLASSES];
extern const char *const metrics_denial_names[METRICS_DENIAL_KINDS];
extern const char *const metrics_refusal_names[METRICS_REFUSALS];
extern const char *const metrics_program_names[METRICS_PROGRAMS];
extern const char *const metrics_stage_error_names[METRICS_STAGE_ERRORS];

/* The process's start, once in main. */
void metrics_start(void);
void metrics_add(enum metrics_counter c, unsigned long long n);
void metrics_gauge_add(enum metrics_gauge g, long long delta);
void metrics_refused(enum metrics_refusal why);
void metrics_response(unsigned status);
void metrics_observe(struct metrics_histogram *h, long long ms);
/* Index of a name in a table of n (the last entry, "other", when absent). */
size_t metrics_index(const char *const *names, size_t n, const char *name);
/* One call of a stage (program: its path or name): ok, or e says why not
 * (exit 2 or 3: refused; its deadline: timeout; else failed). */
void metrics_stage_call(const char *program, bool ok, const struct sbx_error *e);
/* A managed-store or snapshot-store collection pass and what it removed. */
void metrics_store_collected(long long records, long long logs, long long bytes);
void metrics_snapshots_collected(long long manifests, long long objects);

#endif
