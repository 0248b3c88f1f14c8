/* metrics_text.c — GET /metrics in the Prometheus text format 0.0.4: the
 * counters of metrics.c, what other parts hold now (warm runners, sbx-run
 * in flight, the store), the data dir's filesystem and the process. Every
 * label value comes from a fixed table: no id, path or client text. */
#include "metrics_text.h"
#include "metrics.h"
#include "runner.h"
#include "server.h"
#include "standby.h"
#include "store.h"
#include "../lib/datadir.h"

#include <dirent.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define N(a) (sizeof(a) / sizeof((a)[0]))

static unsigned long long load(atomic_ullong *a)
{
	return atomic_load_explicit(a, memory_order_relaxed);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family of one sample without labels. */
static void single(FILE *f, const char *name, const char *type, const char *help, double value)
{
	family(f, name, type, help);
	fprintf(f, "%s %.17g\n", name, value);
}

/* A counter family over one label whose values are names[0..n). */
static void by_label(FILE *f, const char *name, const char *help, const char *label, const char *const *names,
		     size_t n, atomic_ullong *values)
{
	family(f, name, "counter", help);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s{%s=\"%s\"} %llu\n", name, label, names[i], load(&values[i]));
}

static void histogram(FILE *f, const char *name, const char *help, struct metrics_histogram *h)
{
	family(f, name, "histogram", help);
	for (size_t m = 0; m < METRICS_MODES; m++) {
		unsigned long long total = 0;
		for (size_t b = 0; b <= METRICS_BUCKETS; b++) {
			total += load(&h[m].buckets[b]);
			if (b < METRICS_BUCKETS)
				fprintf(f, "%s_bucket{mode=\"%s\",le=\"%g\"} %llu\n", name, metrics_mode_names[m],
					(double)metrics_bucket_ms[b] / 1000, total);
			else
				fprintf(f, "%s_bucket{mode=\"%s\",le=\"+Inf\"} %llu\n", name, metrics_mode_names[m], total);
		}
		fprintf(f, "%s_sum{mode=\"%s\"} %.3f\n", name, metrics_mode_names[m], (double)load(&h[m].sum_ms) / 1000);
		fprintf(f, "%s_count{mode=\"%s\"} %llu\n", name, metrics_mode_names[m], total);
	}
}

/* The counters served alone, as a family of one sample. */
static const struct {
	enum metrics_counter counter;
	const char *name, *help;
} plain[] = {
	{ METRICS_CONNECTIONS, "sbx_http_connections_total", "Connections the API listener accepted." },
	{ METRICS_UPLOAD_RECEIVED_BYTES, "sbx_upload_received_bytes_total", "Upload body bytes staged." },
	{ METRICS_UPLOAD_STORED_BYTES, "sbx_upload_stored_bytes_total", "Bytes of uploads published into a remote workspace." },
	{ METRICS_UPLOADS_STORED, "sbx_uploads_stored_total", "Uploads published into a remote workspace." },
	{ METRICS_STORE_RECORDS_COLLECTED, "sbx_store_collected_records_total", "Managed records the retention removed whole." },
	{ METRICS_STORE_LOGS_COLLECTED, "sbx_store_collected_logs_total",
	  "Managed records whose logs alone the retention removed." },
	{ METRICS_STORE_BYTES_COLLECTED, "sbx_store_collected_bytes_total", "Log and result bytes the retention removed." },
	{ METRICS_STORE_PASSES, "sbx_store_collection_passes_total", "Retention passes over the managed-execution store." },
	{ METRICS_SNAPSHOT_MANIFESTS_COLLECTED, "sbx_snapshot_collected_manifests_total",
	  "Remote snapshots the collection dropped." },
	{ METRICS_SNAPSHOT_OBJECTS_COLLECTED, "sbx_snapshot_collected_objects_total",
	  "Snapshot store objects the collection removed." },
	{ METRICS_SNAPSHOT_PASSES, "sbx_snapshot_collection_passes_total", "Collection passes over the remote snapshot store." },
};

/* The gauges metrics.c keeps. */
static const struct {
	enum metrics_gauge gauge;
	const char *name, *help;
} gauges[] = {
	{ METRICS_EXECUTIONS_QUEUED, "sbx_executions_queued", "Executions accepted and waiting for their turn." },
	{ METRICS_EXECUTIONS_RUNNING, "sbx_executions_running", "Executions out of the queue and not yet ended." },
	{ METRICS_SANDBOXES_ACTIVE, "sbx_sandboxes_active", "Runs whose sandbox has started and whose sbx-run has not ended." },
	{ METRICS_CONNECTIONS_OPEN, "sbx_http_connections_open", "Connections of the API listener open now." },
	{ METRICS_REQUESTS_IN_FLIGHT, "sbx_http_requests_in_flight", "Requests being answered on their own thread." },
};

static void executions(FILE *f)
{
	struct metrics *g = &g_metrics;
	family(f, "sbx_executions_total", "counter",
	       "Executions ended, by mode, outcome and the failure class sbx-run reported (none: null).");
	for (size_t m = 0; m < METRICS_MODES; m++)
		for (size_t o = 0; o < METRICS_OUTCOMES; o++)
			for (size_t c = 0; c < METRICS_CLASSES; c++) {
				unsigned long long v = load(&g->executions[m][o][c]);
				if (v || c == 0) /* the failure-free series always; the others once counted */
					fprintf(f, "sbx_executions_total{mode=\"%s\",outcome=\"%s\",failure_class=\"%s\"} %llu\n",
						metrics_mode_names[m], metrics_outcome_names[o], metrics_class_names[c], v);
			}
	histogram(f, "sbx_execution_duration_seconds",
		  "From leaving the queue to sbx-run's end, of executions that left the queue.", g->duration);
	histogram(f, "sbx_execution_queue_wait_seconds",
		  "From acceptance to leaving the queue (or giving up in it), of every execution ended.",
		  g->queue_wait);
	single(f, "sbx_runs_in_flight", "gauge", "sbx-run processes started and not yet let go (clean-up included).",
	       (double)runner_in_flight());
	single(f, "sbx_warm_runners", "gauge", "Standby sbx-run processes ready now.", (double)standby_ready());
	single(f, "sbx_warm_runners_target", "gauge", "SBX_WARM_RUNNERS: the standbys kept ready.",
	       (double)g_server.cfg.warm_runners);
	static const char *const starts[] = { "warm", "cold" };
	by_label(f, "sbx_run_starts_total", "sbx-run starts: a standby taken (warm) or a process spawned (cold).",
		 "start", starts, N(starts), &g->counters[METRICS_RUN_STARTS_WARM]);
	by_label(f, "sbx_denials_total", "Refusals the sandbox imposed, the counts of the results' denials by kind.",
		 "kind", metrics_denial_names, METRICS_DENIAL_KINDS, g->denials);
	static const char *const refused[] = { "refused" };
	by_label(f, "sbx_egress_decisions_total", "Egress connections refused, from the results' egress denials.",
		 "verdict", refused, N(refused), &g->counters[METRICS_EGRESS_REFUSED]);
}

static void door(FILE *f)
{
	struct metrics *g = &g_metrics;
	for (size_t i = 0; i < N(gauges); i++)
		single(f, gauges[i].name, "gauge", gauges[i].help, (double)atomic_load(&g->gauges[gauges[i].gauge]));
	by_label(f, "sbx_http_refusals_total", "Requests and connections refused or cut at the door, by reason.",
		 "reason", metrics_refusal_names, METRICS_REFUSALS, g->refusals);
	family(f, "sbx_http_responses_total", "counter", "Responses made, by HTTP status (those made at least once).");
	for (size_t s = 100; s < N(g->responses); s++)
		if (load(&g->responses[s]))
			fprintf(f, "sbx_http_responses_total{code=\"%zu\"} %llu\n", s, load(&g->responses[s]));
	family(f, "sbx_stage_calls_total", "counter", "Calls of the stages sbx-httpd runs, by program.");
	for (size_t p = 0; p < METRICS_PROGRAMS; p++)
		if (p + 1 < METRICS_PROGRAMS || load(&g->stage_calls[p]))
			fprintf(f, "sbx_stage_calls_total{program=\"%s\"} %llu\n", metrics_program_names[p],
				load(&g->stage_calls[p]));
	family(f, "sbx_stage_errors_total", "counter",
	       "Stage calls that failed: refused (bad input, policy), failed (anything else), timeout.");
	for (size_t p = 0; p < METRICS_PROGRAMS; p++)
		for (size_t e = 0; e < METRICS_STAGE_ERRORS; e++)
			if (p + 1 < METRICS_PROGRAMS || load(&g->stage_errors[p][e]))
				fprintf(f, "sbx_stage_errors_total{program=\"%s\",reason=\"%s\"} %llu\n",
					metrics_program_names[p], metrics_stage_error_names[e], load(&g->stage_errors[p][e]));
}

static long long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

static void stores(FILE *f)
{
	struct metrics *g = &g_metrics;
	const char *data = g_server.cfg.data_dir;
	char db[PATH_MAX + 64], wal[PATH_MAX + 80];
	sbx_data_path(data, SBX_DATA_RUNNER_EXECUTIONS, "executions.sqlite", db, sizeof(db));
	snprintf(wal, sizeof(wal), "%s-wal", db);
	single(f, "sbx_store_db_bytes", "gauge", "The managed-execution store's SQLite file and its WAL.",
	       (double)(file_size(db) + file_size(wal)));
	single(f, "sbx_store_log_bytes", "gauge", "Log chunks and results the managed-execution store holds.",
	       (double)store_log_bytes());
	for (size_t i = 0; i < N(plain); i++)
		single(f, plain[i].name, "counter", plain[i].help, (double)load(&g->counters[plain[i].counter]));
	struct statvfs vfs;
	if (statvfs(data, &vfs) == 0) {
		single(f, "sbx_data_filesystem_size_bytes", "gauge", "Size of the data dir's filesystem.",
		       (double)vfs.f_blocks * (double)vfs.f_frsize);
		single(f, "sbx_data_filesystem_avail_bytes", "gauge", "Bytes of the data dir's filesystem free to sbx.",
		       (double)vfs.f_bavail * (double)vfs.f_frsize);
	}
}

static long long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	long long n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n > 0 ? n - 1 : 0; /* not the directory's own */
}

static void process(FILE *f)
{
	long long pages_virt = 0, pages_res = 0;
	FILE *statm = fopen("/proc/self/statm", "re");
	if (statm) {
		if (fscanf(statm, "%lld %lld", &pages_virt, &pages_res) != 2)
			pages_virt = pages_res = 0;
		fclose(statm);
	}
	double page = (double)sysconf(_SC_PAGESIZE);
	struct rusage ru;
	struct rlimit rl;
	double cpu = getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
								 ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6
						       : 0;
	single(f, "process_cpu_seconds_total", "counter", "User and system CPU time of sbx-httpd.", cpu);
	single(f, "process_resident_memory_bytes", "gauge", "Resident memory of sbx-httpd.", (double)pages_res * page);
	single(f, "process_virtual_memory_bytes", "gauge", "Virtual memory of sbx-httpd.", (double)pages_virt * page);
	single(f, "process_open_fds", "gauge", "Open file descriptors of sbx-httpd.", (double)open_fds());
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		single(f, "process_max_fds", "gauge", "RLIMIT_NOFILE of sbx-httpd.", (double)rl.rlim_cur);
	single(f, "process_start_time_seconds", "gauge", "When sbx-httpd started, in seconds since the epoch.",
	       (double)g_metrics.start_wall_ms / 1000);
}

char *metrics_text(size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	family(f, "sbx_build_info", "gauge", "sbx-httpd's build (the runnerVersion), always 1.");
	fprintf(f, "sbx_build_info{version=\"%s\"} 1\n", g_server.version);
	executions(f);
	door(f);
	stores(f);
	process(f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

enum MHD_Result handle_metrics(struct req *r)
{
	size_t len = 0;
	char *text = metrics_text(&len);
	struct MHD_Response *resp = text ? MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE) : NULL;
	if (!resp) {
		free(text);
		return reply_error(r, 500, "out of memory");
	}
	return reply_response(r, 200, resp, CONTENT_TYPE);
}
