/* metrics_run.c — an execution in the metrics: the queued and running
 * gauges as it moves, and at its end the outcome and failure class of
 * what sbx-run reported, the queue wait, the duration (its turn to
 * sbx-run's end) and the result's denials (absent in older results). */
#include "metrics_run.h"
#include "../lib/clock.h"
#include "../lib/exitcodes.h"

#include <jansson.h>
#include <stdatomic.h>
#include <string.h>

void metrics_execution_accepted(struct api_exec *x)
{
	x->queued_ms = sbx_mono_ms();
	metrics_gauge_add(METRICS_EXECUTIONS_QUEUED, 1);
}

void metrics_execution_turn(struct api_exec *x)
{
	x->started_ms = sbx_mono_ms();
	if (x->queued_ms)
		metrics_gauge_add(METRICS_EXECUTIONS_QUEUED, -1);
	metrics_gauge_add(METRICS_EXECUTIONS_RUNNING, 1);
}

void metrics_execution_ran(struct api_exec *x, const struct sbx_error *e)
{
	x->ended_ms = sbx_mono_ms();
	x->start_exit = !e ? 0 : e->exit_code ? e->exit_code : SBX_EXIT_INTERNAL;
}

/* The failure class of an exit status (an unknown one is infra). */
static size_t class_of_exit(int code)
{
	const char *cls = sbx_exit_failure_class(code ? code : SBX_EXIT_INTERNAL);
	return metrics_index(metrics_class_names, METRICS_CLASSES, cls ? cls : "infra");
}

/* Each denial's count (1 when it has none) by kind; egress ones are
 * also the refused egress decisions. */
static void count_denials(const json_t *denials)
{
	size_t i;
	json_t *d;
	if (!json_is_array(denials))
		return;
	json_array_foreach(denials, i, d) {
		json_t *count = json_object_get(d, "count");
		json_int_t n = json_is_integer(count) ? json_integer_value(count) : 1;
		if (!json_is_object(d) || n <= 0)
			continue;
		size_t kind = metrics_index(metrics_denial_names, METRICS_DENIAL_KINDS,
					    json_string_value(json_object_get(d, "kind")));
		atomic_fetch_add_explicit(&g_metrics.denials[kind], (unsigned long long)n, memory_order_relaxed);
		if (kind == METRICS_DENIAL_EGRESS)
			metrics_add(METRICS_EGRESS_REFUSED, (unsigned long long)n);
	}
}

void metrics_execution_end(enum metrics_mode mode, const struct api_exec *x, const struct child *c)
{
	long long now = sbx_mono_ms();
	json_t *res = c ? c->result : NULL;
	const char *failure = json_string_value(json_object_get(res, "failureClass"));
	enum metrics_outcome outcome = METRICS_FAILED;
	size_t cls = 0;
	if (!x->started_ms) /* it gave up in line (client gone, cancelled) */
		outcome = METRICS_CANCELLED;
	else if (!c)
		cls = class_of_exit(x->start_exit);
	else if (!res) /* sbx-run ended without a result */
		cls = class_of_exit(c->exit_code);
	else if (failure)
		cls = metrics_index(metrics_class_names, METRICS_CLASSES, failure);
	else if (json_integer_value(json_object_get(res, "exitCode")) == 0 && json_is_integer(json_object_get(res, "exitCode")))
		outcome = METRICS_COMPLETED;
	if (!strcmp(metrics_class_names[cls], "cancelled"))
		outcome = METRICS_CANCELLED;
	metrics_observe(&g_metrics.queue_wait[mode], (x->started_ms ? x->started_ms : now) - x->queued_ms);
	if (x->started_ms)
		metrics_observe(&g_metrics.duration[mode], (x->ended_ms ? x->ended_ms : now) - x->started_ms);
	metrics_gauge_add(x->started_ms ? METRICS_EXECUTIONS_RUNNING : METRICS_EXECUTIONS_QUEUED, -1);
	count_denials(json_object_get(res, "denials"));
	atomic_fetch_add_explicit(&g_metrics.executions[mode][outcome][cls], 1, memory_order_relaxed);
}
