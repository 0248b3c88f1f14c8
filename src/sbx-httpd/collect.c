/* collect.c — the collector thread: the managed-execution store's retention
 * (store_retention.c) and the remote snapshot store's collection (an
 * sbx-ws collect child), in bounded steps off every request's path; woken when
 * an execution finishes or a snapshot is made, and by its own timer. */
#include "collect.h"
#include "server.h"
#include "config.h"
#include "ws_call.h"
#include "metrics.h"
#include "../lib/diag.h"
#include "../lib/clock.h"
#include "store.h"
#include "speculative.h"
#include "../lib/diag.h"

#include <pthread.h>
#include <jansson.h>
#include <stdbool.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#define PERIOD_MAX_MS 60000 /* the age is checked at least this often */
#define PERIOD_MIN_MS 1000
#define STEP_PAUSE_NS 200000 /* between two steps: the requests' turn on the store */
#define REST_FACTOR 10       /* a snapshot pass at most every 10x its own duration */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static bool kicked[2];
struct totals {
	long long at_ms;             /* the last pass's end (wall clock; 0: none yet) */
	long long finished_bytes, open_bytes; /* the store's logs and results then */
	long long records, logs, manifests, objects;
	long long snapshot_pass_ms;  /* how long the last snapshot pass took */
};
static struct totals totals;

void collect_kick(enum collect_what what)
{
	pthread_mutex_lock(&lock);
	kicked[what] = true;
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
}

static long long period_ms(void)
{
	long long age_ms = g_server.cfg.exec_retention_s * 1000 / 4;
	return !age_ms || age_ms > PERIOD_MAX_MS ? PERIOD_MAX_MS : age_ms < PERIOD_MIN_MS ? PERIOD_MIN_MS : age_ms;
}

/* Returns when the next pass is due on the monotonic clock: soon while
 * the store is past its cap (records wait out the replay guard, running
 * ones their end), else by the age's period. */
static long long executions_pass(void)
{
	const struct config *c = &g_server.cfg;
	/* A signed request stays valid max-age either side of its stamp: its
	 * id is refused for that long after it was queued, and the cap leaves
	 * a finished record to its client as long. */
	struct store_retention r = { .max_age_ms = c->exec_retention_s * 1000, .max_bytes = c->exec_log_max_bytes,
				     .replay_guard_ms = 2 * c->signature_max_age_ms };
	struct store_collected done = { 0 };
	struct timespec pause = { 0, STEP_PAUSE_NS };
	while (store_collect_step(&r, sbx_wall_ms(), &done) > 0)
		nanosleep(&pause, NULL);
	long long open = store_open_bytes(), finished = store_log_bytes() - open;
	metrics_store_collected(done.records, done.logs, done.bytes);
	pthread_mutex_lock(&lock);
	totals.records += done.records;
	totals.logs += done.logs;
	totals.finished_bytes = finished;
	totals.open_bytes = open;
	totals.at_ms = sbx_wall_ms();
	pthread_mutex_unlock(&lock);
	bool over = c->exec_log_max_bytes && finished > c->exec_log_max_bytes;
	return sbx_mono_ms() + (over ? PERIOD_MIN_MS : period_ms());
}

/* One collection of the remote snapshot store (sbx-ws collect) with the
 * configured keep and grace; 0 with its counts, or -1 (a warning logged). */
static int remote_snapshots_collect(long long *manifests, long long *objects, long long *next_due_ms)
{
	char keep[32], grace[32];
	snprintf(keep, sizeof(keep), "%lld", g_server.cfg.snapshot_keep);
	snprintf(grace, sizeof(grace), "%lld", g_server.cfg.snapshot_grace_s);
	struct ws_call c = { .opts = { "collect", "--keep", keep, "--grace-s", grace }, .fd = -1 };
	struct sbx_error e;
	json_t *out = ws_call_run(&c, &e);
	*manifests = *objects = *next_due_ms = 0;
	if (!out) {
		sbx_diag("warning", "snapshot-collection", NULL, "%s", e.message);
		return -1;
	}
	*manifests = json_integer_value(json_object_get(out, "manifests"));
	*objects = json_integer_value(json_object_get(out, "objects"));
	*next_due_ms = json_integer_value(json_object_get(out, "nextDueMs"));
	json_decref(out);
	return 0;
}

/* Returns when the next pass is due on the monotonic clock (LLONG_MAX:
 * only when asked); *rest: none before then, even when asked. */
static long long snapshots_pass(long long *rest)
{
	struct {
		long long manifests, objects, next_due_ms;
	} done;
	long long start = sbx_mono_ms();
	if (remote_snapshots_collect(&done.manifests, &done.objects, &done.next_due_ms) != 0)
		done.next_due_ms = sbx_wall_ms() + PERIOD_MAX_MS;
	long long now = sbx_mono_ms();
	*rest = now + (now - start) * REST_FACTOR + PERIOD_MIN_MS;
	metrics_snapshots_collected(done.manifests, done.objects);
	pthread_mutex_lock(&lock);
	totals.manifests += done.manifests;
	totals.objects += done.objects;
	totals.snapshot_pass_ms = now - start;
	totals.at_ms = sbx_wall_ms();
	pthread_mutex_unlock(&lock);
	if (!done.next_due_ms)
		return LLONG_MAX;
	long long due = now + (done.next_due_ms - sbx_wall_ms());
	return due > *rest ? due : *rest;
}

static void *run(void *arg)
{
	(void)arg;
	long long exec_due = 0, snap_due = 0, snap_rest = 0;
	for (;;) {
		pthread_mutex_lock(&lock);
		for (;;) {
			long long now = sbx_mono_ms();
			if (kicked[COLLECT_EXECUTIONS])
				exec_due = now;
			if (kicked[COLLECT_SNAPSHOTS] && snap_due > snap_rest)
				snap_due = snap_rest > now ? snap_rest : now;
			kicked[COLLECT_EXECUTIONS] = kicked[COLLECT_SNAPSHOTS] = false;
			long long due = exec_due < snap_due ? exec_due : snap_due;
			if (due <= now)
				break;
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			long long wait = due - now > PERIOD_MAX_MS ? PERIOD_MAX_MS : due - now;
			ts.tv_sec += wait / 1000;
			ts.tv_nsec += (wait % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&wake, &lock, &ts);
		}
		pthread_mutex_unlock(&lock);
		long long now = sbx_mono_ms();
		if (exec_due <= now) {
			exec_due = executions_pass();
			speculative_sweep(); /* expired pending changes */
		}
		if (snap_due <= now) {
			snap_due = snapshots_pass(&snap_rest);
		}
	}
	return NULL;
}

void collect_start(void)
{
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&wake, &attr);
	pthread_condattr_destroy(&attr);
	pthread_t t;
	pthread_attr_t ta;
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&t, &ta, run, NULL);
	pthread_attr_destroy(&ta);
	if (rc != 0)
		sbx_diag("error", "collector", NULL, "no collector thread (%s): nothing will be collected", strerror(rc));
}

json_t *collect_health(void)
{
	const struct config *c = &g_server.cfg;
	char at[32];
	pthread_mutex_lock(&lock);
	struct totals t = totals;
	pthread_mutex_unlock(&lock);
	if (t.at_ms)
		sbx_iso_time(t.at_ms, at);
	return json_pack("{s:{s:I,s:I,s:I,s:I},s:{s:I,s:I},s:{s:o,s:I,s:I,s:I,s:I,s:I}}", "executions", "maxAgeSeconds",
			 (json_int_t)c->exec_retention_s, "maxLogBytes", (json_int_t)c->exec_log_max_bytes, "logBytes",
			 (json_int_t)t.finished_bytes, "runningLogBytes", (json_int_t)t.open_bytes, "remoteSnapshots", "keepPerWorkspace", (json_int_t)c->snapshot_keep,
			 "graceSeconds", (json_int_t)c->snapshot_grace_s, "collected", "at",
			 t.at_ms ? json_string(at) : json_null(), "executions", (json_int_t)t.records, "executionLogs",
			 (json_int_t)t.logs, "snapshots", (json_int_t)t.manifests, "snapshotObjects", (json_int_t)t.objects,
			 "snapshotPassMs", (json_int_t)t.snapshot_pass_ms);
}
