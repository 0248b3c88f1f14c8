/* test_metrics.c — sbx-httpd's metrics as tables: an execution's outcome
 * and failure class from what sbx-run reported, the denials its result
 * lists (malformed and absent ones tolerated), histogram buckets, stage
 * errors by reason, the queued and running gauges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "error.h"
#include "exitcodes.h"
#include "../../src/sbx-httpd/metrics.h"
#include "../../src/sbx-httpd/metrics_run.h"

#include <jansson.h>
#include <stdatomic.h>
#include <string.h>

static unsigned long long get(atomic_ullong *a)
{
	return atomic_load(a);
}

/* Observations a histogram holds, whatever their buckets. */
static unsigned long long observed(struct metrics_histogram *h)
{
	unsigned long long n = 0;
	for (size_t b = 0; b <= METRICS_BUCKETS; b++)
		n += get(&h->buckets[b]);
	return n;
}

static size_t cls(const char *name)
{
	return metrics_index(metrics_class_names, METRICS_CLASSES, name);
}

/* Ends one execution that ran with this result (NULL: none). */
static void end_with(enum metrics_mode mode, const char *result_json, int exit_code)
{
	struct api_exec x;
	struct child c;
	memset(&x, 0, sizeof(x));
	memset(&c, 0, sizeof(c));
	metrics_execution_accepted(&x);
	metrics_execution_turn(&x);
	metrics_execution_ran(&x, NULL);
	c.result = result_json ? json_loads(result_json, 0, NULL) : NULL;
	c.exit_code = exit_code;
	metrics_execution_end(mode, &x, &c);
	json_decref(c.result);
}

static void outcomes_and_classes(void **state)
{
	(void)state;
	memset(&g_metrics, 0, sizeof(g_metrics));
	static const struct {
		const char *result;
		int exit_code;
		enum metrics_outcome outcome;
		const char *cls;
	} rows[] = {
		{ "{\"failureClass\":null,\"exitCode\":0}", 0, METRICS_COMPLETED, "none" },
		{ "{\"failureClass\":null,\"exitCode\":1}", 1, METRICS_FAILED, "none" },
		{ "{\"failureClass\":null,\"exitCode\":null}", 0, METRICS_FAILED, "none" },
		{ "{\"failureClass\":\"timeout\",\"exitCode\":null}", 7, METRICS_FAILED, "timeout" },
		{ "{\"failureClass\":\"resource-exhausted\"}", 6, METRICS_FAILED, "resource-exhausted" },
		{ "{\"failureClass\":\"cancelled\"}", 10, METRICS_CANCELLED, "cancelled" },
		{ "{\"failureClass\":\"from-the-future\"}", 5, METRICS_FAILED, "other" },
		{ NULL, 137, METRICS_FAILED, "infra" },     /* killed: no result */
		{ NULL, SBX_EXIT_INTEGRITY, METRICS_FAILED, "integrity" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		unsigned long long before = get(&g_metrics.executions[METRICS_SYNC][rows[i].outcome][cls(rows[i].cls)]);
		end_with(METRICS_SYNC, rows[i].result, rows[i].exit_code);
		assert_int_equal(get(&g_metrics.executions[METRICS_SYNC][rows[i].outcome][cls(rows[i].cls)]), before + 1);
	}
	unsigned long long total = 0;
	for (size_t o = 0; o < METRICS_OUTCOMES; o++)
		for (size_t c = 0; c < METRICS_CLASSES; c++)
			total += get(&g_metrics.executions[METRICS_SYNC][o][c]);
	assert_int_equal(total, sizeof(rows) / sizeof(rows[0]));
	assert_int_equal(observed(&g_metrics.duration[METRICS_SYNC]), total);
	assert_int_equal(observed(&g_metrics.queue_wait[METRICS_SYNC]), total);
	assert_int_equal(atomic_load(&g_metrics.gauges[METRICS_EXECUTIONS_RUNNING]), 0);
	assert_int_equal(atomic_load(&g_metrics.gauges[METRICS_EXECUTIONS_QUEUED]), 0);
}

static void gave_up_in_line_or_did_not_start(void **state)
{
	(void)state;
	memset(&g_metrics, 0, sizeof(g_metrics));
	struct api_exec x;
	memset(&x, 0, sizeof(x));
	metrics_execution_accepted(&x);
	assert_int_equal(atomic_load(&g_metrics.gauges[METRICS_EXECUTIONS_QUEUED]), 1);
	metrics_execution_end(METRICS_MANAGED, &x, NULL); /* cancelled before its turn */
	assert_int_equal(get(&g_metrics.executions[METRICS_MANAGED][METRICS_CANCELLED][cls("none")]), 1);
	assert_int_equal(atomic_load(&g_metrics.gauges[METRICS_EXECUTIONS_QUEUED]), 0);
	assert_int_equal(observed(&g_metrics.queue_wait[METRICS_MANAGED]), 1);
	assert_int_equal(observed(&g_metrics.duration[METRICS_MANAGED]), 0); /* it never ran */

	struct sbx_error e;
	sbx_error_set(&e, SBX_EXIT_INTEGRITY, "integrity", "the package changed");
	memset(&x, 0, sizeof(x));
	metrics_execution_accepted(&x);
	metrics_execution_turn(&x);
	assert_int_equal(atomic_load(&g_metrics.gauges[METRICS_EXECUTIONS_RUNNING]), 1);
	metrics_execution_ran(&x, &e); /* its turn came; sbx-run did not start */
	metrics_execution_end(METRICS_MANAGED, &x, NULL);
	assert_int_equal(get(&g_metrics.executions[METRICS_MANAGED][METRICS_FAILED][cls("integrity")]), 1);
	assert_int_equal(observed(&g_metrics.duration[METRICS_MANAGED]), 1);
	assert_int_equal(atomic_load(&g_metrics.gauges[METRICS_EXECUTIONS_RUNNING]), 0);
}

static void denials_by_kind(void **state)
{
	(void)state;
	memset(&g_metrics, 0, sizeof(g_metrics));
	end_with(METRICS_SYNC,
		 "{\"failureClass\":null,\"exitCode\":0,\"denials\":["
		 "{\"kind\":\"seccomp\",\"what\":\"ptrace\",\"count\":3},"
		 "{\"kind\":\"egress\",\"what\":\"example.com:443\",\"count\":2},"
		 "{\"kind\":\"limit\",\"what\":\"pids\"},"           /* no count: one */
		 "{\"kind\":\"quantum\",\"count\":4},"               /* a kind not known: other */
		 "{\"kind\":\"seccomp\",\"count\":0},"               /* nothing refused */
		 "{\"kind\":\"egress\",\"count\":-5},"               /* nonsense: skipped */
		 "\"not an object\", 7, null]}",
		 0);
	assert_int_equal(get(&g_metrics.denials[METRICS_DENIAL_SECCOMP]), 3);
	assert_int_equal(get(&g_metrics.denials[METRICS_DENIAL_EGRESS]), 2);
	assert_int_equal(get(&g_metrics.denials[METRICS_DENIAL_LIMIT]), 1);
	assert_int_equal(get(&g_metrics.denials[METRICS_DENIAL_OTHER]), 4);
	assert_int_equal(get(&g_metrics.counters[METRICS_EGRESS_REFUSED]), 2);
	/* An older result (no denials), one whose denials are no array, none at all. */
	end_with(METRICS_SYNC, "{\"failureClass\":null,\"exitCode\":0}", 0);
	end_with(METRICS_SYNC, "{\"failureClass\":null,\"exitCode\":0,\"denials\":{\"kind\":\"seccomp\",\"count\":9}}", 0);
	end_with(METRICS_SYNC, NULL, 5);
	assert_int_equal(get(&g_metrics.denials[METRICS_DENIAL_SECCOMP]), 3);
	assert_int_equal(get(&g_metrics.counters[METRICS_EGRESS_REFUSED]), 2);
}

static void histogram_buckets(void **state)
{
	(void)state;
	struct metrics_histogram h;
	memset(&h, 0, sizeof(h));
	static const struct {
		long long ms;
		size_t bucket;
	} rows[] = { { -3, 0 }, { 0, 0 }, { 5, 0 }, { 6, 1 }, { 1000, 7 }, { 1001, 8 }, { 3600000, 17 }, { 3600001, 18 } };
	long long sum = 0;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		unsigned long long before = get(&h.buckets[rows[i].bucket]);
		metrics_observe(&h, rows[i].ms);
		assert_int_equal(get(&h.buckets[rows[i].bucket]), before + 1);
		sum += rows[i].ms > 0 ? rows[i].ms : 0;
	}
	assert_int_equal(get(&h.sum_ms), sum);
}

static void stage_errors_by_reason(void **state)
{
	(void)state;
	memset(&g_metrics, 0, sizeof(g_metrics));
	struct sbx_error usage, timeout, internal;
	sbx_error_set(&usage, SBX_EXIT_USAGE, "bad-field", "key");
	sbx_error_set(&timeout, SBX_EXIT_TIMEOUT, "timeout", "sbx-ws did not answer in time");
	sbx_error_set(&internal, SBX_EXIT_INTERNAL, "error", "sbx-ws was killed by signal 9");
	size_t ws = metrics_index(metrics_program_names, METRICS_PROGRAMS, "sbx-ws");
	size_t other = metrics_index(metrics_program_names, METRICS_PROGRAMS, "no-such-stage");
	assert_string_equal(metrics_program_names[other], "other");
	metrics_stage_call("/usr/local/bin/sbx-ws", true, NULL);
	metrics_stage_call("/usr/local/bin/sbx-ws", false, &usage);
	metrics_stage_call("sbx-ws", false, &timeout);
	metrics_stage_call("sbx-ws", false, &internal);
	metrics_stage_call("sbx-ws", false, NULL);
	metrics_stage_call("/opt/sbx-elsewhere", true, NULL);
	assert_int_equal(get(&g_metrics.stage_calls[ws]), 5);
	assert_int_equal(get(&g_metrics.stage_errors[ws][METRICS_STAGE_REFUSED]), 1);
	assert_int_equal(get(&g_metrics.stage_errors[ws][METRICS_STAGE_TIMEOUT]), 1);
	assert_int_equal(get(&g_metrics.stage_errors[ws][METRICS_STAGE_FAILED]), 2);
	assert_int_equal(get(&g_metrics.stage_calls[other]), 1);
	/* Statuses: any the daemon could send, nothing out of range. */
	metrics_response(404);
	metrics_response(600);
	metrics_response(100000);
	assert_int_equal(get(&g_metrics.responses[404]), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(outcomes_and_classes),
		cmocka_unit_test(gave_up_in_line_or_did_not_start),
		cmocka_unit_test(denials_by_kind),
		cmocka_unit_test(histogram_buckets),
		cmocka_unit_test(stage_errors_by_reason),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
