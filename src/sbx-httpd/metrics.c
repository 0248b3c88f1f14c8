/* metrics.c — the counters behind GET /metrics (metrics.h): one static
 * block of atomics, relaxed adds; the exposition (metrics_text.c) reads
 * them. Nothing here allocates or locks. */
#include "metrics.h"
#include "../lib/clock.h"
#include "../lib/exitcodes.h"

#include <stdatomic.h>
#include <string.h>

struct metrics g_metrics;

const long long metrics_bucket_ms[METRICS_BUCKETS] = { 5,     10,    25,    50,     100,    250,    500,     1000,    2500,
						       5000,  10000, 30000, 60000,  120000, 300000, 600000, 1800000, 3600000 };

const char *const metrics_mode_names[METRICS_MODES] = { "sync", "managed" };
const char *const metrics_outcome_names[METRICS_OUTCOMES] = { "completed", "failed", "cancelled" };
const char *const metrics_class_names[METRICS_CLASSES] = { "none",      "user",      "policy",
							   "infra",     "resource-exhausted", "timeout",
							   "cancelled", "sandbox-violation", "integrity",
							   "other" };
const char *const metrics_denial_names[METRICS_DENIAL_KINDS] = { "seccomp", "egress", "limit", "other" };
const char *const metrics_refusal_names[METRICS_REFUSALS] = { "max_connections", "max_requests",  "no_thread",
							      "unauthorized",    "bad_signature", "head_deadline",
							      "slow_body" };
const char *const metrics_program_names[METRICS_PROGRAMS] = { "sbx-run",     "sbx-ws",  "sbx-env",    "sbx-skills",
							      "sbx-secrets", "sbx-npu", "sbx-broker", "other" };
const char *const metrics_stage_error_names[METRICS_STAGE_ERRORS] = { "refused", "failed", "timeout" };

void metrics_start(void)
{
	g_metrics.start_wall_ms = sbx_wall_ms();
}

void metrics_add(enum metrics_counter c, unsigned long long n)
{
	atomic_fetch_add_explicit(&g_metrics.counters[c], n, memory_order_relaxed);
}

void metrics_gauge_add(enum metrics_gauge g, long long delta)
{
	atomic_fetch_add_explicit(&g_metrics.gauges[g], delta, memory_order_relaxed);
}

void metrics_refused(enum metrics_refusal why)
{
	atomic_fetch_add_explicit(&g_metrics.refusals[why], 1, memory_order_relaxed);
}

void metrics_response(unsigned status)
{
	if (status < sizeof(g_metrics.responses) / sizeof(g_metrics.responses[0]))
		atomic_fetch_add_explicit(&g_metrics.responses[status], 1, memory_order_relaxed);
}

void metrics_observe(struct metrics_histogram *h, long long ms)
{
	size_t b = 0;
	ms = ms < 0 ? 0 : ms;
	while (b < METRICS_BUCKETS && ms > metrics_bucket_ms[b])
		b++;
	atomic_fetch_add_explicit(&h->buckets[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ms, (unsigned long long)ms, memory_order_relaxed);
}

size_t metrics_index(const char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; name && i + 1 < n; i++)
		if (!strcmp(names[i], name))
			return i;
	return n - 1;
}

void metrics_stage_call(const char *program, bool ok, const struct sbx_error *e)
{
	const char *slash = program ? strrchr(program, '/') : NULL;
	size_t p = metrics_index(metrics_program_names, METRICS_PROGRAMS, slash ? slash + 1 : program);
	atomic_fetch_add_explicit(&g_metrics.stage_calls[p], 1, memory_order_relaxed);
	if (ok)
		return;
	enum metrics_stage_error why = METRICS_STAGE_FAILED;
	if (e && !strcmp(e->code, "timeout"))
		why = METRICS_STAGE_TIMEOUT;
	else if (e && (e->exit_code == SBX_EXIT_USAGE || e->exit_code == SBX_EXIT_POLICY))
		why = METRICS_STAGE_REFUSED;
	atomic_fetch_add_explicit(&g_metrics.stage_errors[p][why], 1, memory_order_relaxed);
}

void metrics_store_collected(long long records, long long logs, long long bytes)
{
	metrics_add(METRICS_STORE_PASSES, 1);
	metrics_add(METRICS_STORE_RECORDS_COLLECTED, (unsigned long long)(records > 0 ? records : 0));
	metrics_add(METRICS_STORE_LOGS_COLLECTED, (unsigned long long)(logs > 0 ? logs : 0));
	metrics_add(METRICS_STORE_BYTES_COLLECTED, (unsigned long long)(bytes > 0 ? bytes : 0));
}

void metrics_snapshots_collected(long long manifests, long long objects)
{
	metrics_add(METRICS_SNAPSHOT_PASSES, 1);
	metrics_add(METRICS_SNAPSHOT_MANIFESTS_COLLECTED, (unsigned long long)(manifests > 0 ? manifests : 0));
	metrics_add(METRICS_SNAPSHOT_OBJECTS_COLLECTED, (unsigned long long)(objects > 0 ? objects : 0));
}
