/* sbx-broker — allowlisted workloads on the host (npu.md 2), for what
 * cannot run in a sandbox (Ascend MindSpore's container-id check): submit
 * a job, read it back within its session, cancel it; `drain` runs the
 * global FIFO and `recover` marks what a dead runner left as interrupted. */
#include "broker.h"
#include "../lib/cli.h"
#include "../lib/datadir.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "../lib/spawn.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

struct options {
	const char *session;
	const char *request;
	bool no_drain, active;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-broker [OPTIONS] workloads | submit [REQUEST|-] | list | get ID | logs ID\n"
		"                            | result ID | cancel ID | drain | recover\n"
		"\n"
		"Runs allowlisted workloads on the host, one at a time in FIFO order. Prints JSON.\n"
		"See sbx-broker(1).\n"
		"\n"
		"  --session ID        the job's session (list, get, logs, result, cancel)\n"
		"  --active            list: queued and running jobs of every session\n"
		"  --no-drain          submit: only queue (the caller runs `drain` itself)\n"
		"  --enable            as SCIENCE_AGENT_NPU_BROKER=1 (default: that variable)\n"
		"  --config FILE       the allowlist (default $SCIENCE_AGENT_NPU_WORKLOAD_CONFIG, else\n"
		"                      <root>/share/sbx/workloads/npu-workloads.default.json)\n"
		"  --root DIR          what ${repo:...} resolves under (default $SBX_BROKER_ROOT, else\n"
		"                      the directory above this program's bin/)\n"
		"  --data-dir DIR      (default: the sbx data dir); jobs in <data>/npu-jobs\n"
		"  --log-budget BYTES  stdout + stderr kept per job (default 1 GiB)\n"
		"  --help, --version\n");
	sbx_cli_print_exit_codes(out);
}

static void path_opt(char *dst, const char *src, const char *name)
{
	if (strlen(src) >= PATH_MAX)
		sbx_cli_usage_error("sbx-broker", name);
	strcpy(dst, src);
}

static bool env_enabled(void)
{
	const char *v = getenv("SCIENCE_AGENT_NPU_BROKER");
	return v && (!strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"));
}

static void default_root(char *root)
{
	const char *v = getenv("SBX_BROKER_ROOT");
	char self[PATH_MAX];
	ssize_t n;
	if (v && *v) {
		path_opt(root, v, "SBX_BROKER_ROOT: too long");
	} else if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[n] = '\0';
		for (int i = 0; i < 2; i++) {
			char *slash = strrchr(self, '/');
			if (slash)
				*slash = '\0';
		}
		strcpy(root, self[0] ? self : "/");
	} else {
		strcpy(root, "/usr/local");
	}
}

static int parse(int argc, char **argv, struct options *o, struct broker *b)
{
	enum { OPT_SESSION = 256, OPT_ACTIVE, OPT_NO_DRAIN, OPT_ENABLE, OPT_CONFIG, OPT_ROOT, OPT_DATA, OPT_BUDGET, OPT_VERSION };
	static const struct option options[] = {
		{ "session", required_argument, NULL, OPT_SESSION },
		{ "active", no_argument, NULL, OPT_ACTIVE },
		{ "no-drain", no_argument, NULL, OPT_NO_DRAIN },
		{ "enable", no_argument, NULL, OPT_ENABLE },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "data-dir", required_argument, NULL, OPT_DATA },
		{ "log-budget", required_argument, NULL, OPT_BUDGET },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = getenv("SCIENCE_AGENT_NPU_WORKLOAD_CONFIG");
	b->enabled = env_enabled();
	b->log_budget = BROKER_LOG_BUDGET_DEFAULT;
	default_root(b->root);
	if (sbx_data_dir(b->data, sizeof(b->data)) != 0)
		b->data[0] = '\0';
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
		switch (c) {
		case OPT_SESSION: o->session = optarg; break;
		case OPT_ACTIVE: o->active = true; break;
		case OPT_NO_DRAIN: o->no_drain = true; break;
		case OPT_ENABLE: b->enabled = true; break;
		case OPT_CONFIG: config = optarg; break;
		case OPT_ROOT: path_opt(b->root, optarg, "--root: too long"); break;
		case OPT_DATA: path_opt(b->data, optarg, "--data-dir: too long"); break;
		case OPT_BUDGET: b->log_budget = sbx_cli_parse_long("--log-budget", optarg, 0, 1l << 40); break;
		case 'h': usage(stdout); exit(SBX_EXIT_OK);
		case OPT_VERSION: sbx_cli_print_version("sbx-broker"); exit(SBX_EXIT_OK);
		default: sbx_cli_bad_option("sbx-broker", argv[optind - 1]);
		}
	}
	if (!b->data[0] || strlen(b->data) > PATH_MAX - 64)
		sbx_cli_usage_error("sbx-broker", "data directory path too long");
	sbx_data_path(b->data, SBX_DATA_NPU_JOBS, NULL, b->dir, sizeof(b->dir));
	if (config && *config)
		path_opt(b->config, config, "--config: too long");
	else if (snprintf(b->config, sizeof(b->config), "%.*s/share/sbx/workloads/npu-workloads.default.json",
			  PATH_MAX - 64, b->root) < 0)
		b->config[0] = '\0';
	if (optind >= argc)
		sbx_cli_usage_error("sbx-broker", "a command is required (see --help)");
	return optind;
}

void broker_spawn_drainer(const struct broker *b)
{
	char self[PATH_MAX], budget[32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = '\0';
	snprintf(budget, sizeof(budget), "%lld", b->log_budget);
	const char *argv[] = { self, "--data-dir", b->data, "--config", b->config, "--root", b->root,
			       "--log-budget", budget, b->enabled ? "--enable" : "drain", b->enabled ? "drain" : NULL, NULL };
	struct sbx_spawn s = { .argv = argv, .stdin_fd = -1, .new_session = true };
	struct sbx_error e;
	/* Detached: the job must not die with a short-lived submit. */
	if (sbx_spawn_start(&s, NULL, &e) < 0)
		sbx_diag_error(&e);
}


static json_t *list(const struct broker *b, const struct options *o, struct sbx_error *e)
{
	if (!o->active && (!o->session || !*o->session)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-request", "session_id is required for NPU job access");
		return NULL;
	}
	sqlite3_stmt *st = broker_sql(b, o->active ? "SELECT id FROM jobs WHERE state IN ('queued', 'running') ORDER BY seq"
						   : "SELECT id FROM jobs WHERE session_id = ?1 ORDER BY created_at, seq");
	if (!o->active)
		sqlite3_bind_text(st, 1, o->session, -1, SQLITE_TRANSIENT);
	json_t *out = json_array();
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		json_t *j = broker_job_json(b, (const char *)sqlite3_column_text(st, 0), true);
		if (j)
			json_array_append_new(out, j);
	}
	sqlite3_finalize(st);
	return out;
}

static bool terminal(const json_t *job)
{
	const char *s = json_string_value(json_object_get(job, "state"));
	return s && strcmp(s, "queued") && strcmp(s, "running");
}

static json_t *result(const struct broker *b, const char *id, const char *session, struct sbx_error *e)
{
	json_t *job = broker_owned(b, id, session, "not-found", "NPU job not found%.0s", e);
	if (!job)
		return NULL;
	if (!terminal(job)) {
		json_decref(job);
		sbx_error_set(e, SBX_EXIT_USAGE, "not-terminal", "NPU job is not terminal");
		return NULL;
	}
	/* Recomputed: files may have appeared since; a change is kept. */
	json_t *files = broker_created_files(json_string_value(json_object_get(job, "workspaceRoot")),
					     json_object_get(job, "inputs"));
	if (!json_equal(files, json_object_get(job, "createdFiles"))) {
		char *text = json_dumps(files, JSON_COMPACT);
		sqlite3_stmt *st = broker_sql(b, "UPDATE jobs SET created_files = ?2 WHERE id = ?1");
		sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, text ? text : "[]", -1, SQLITE_TRANSIENT);
		sqlite3_step(st);
		sqlite3_finalize(st);
		free(text);
		json_object_set(job, "createdFiles", files);
	}
	json_decref(files);
	return json_pack("{s:o}", "job", job);
}

static json_t *command(struct broker *b, const struct options *o, const char *cmd, const char *arg,
		       struct sbx_error *e)
{
	if (!strcmp(cmd, "workloads"))
		return broker_capability(b);
	if (!strcmp(cmd, "submit")) {
		json_t *req = sbx_json_load(arg ? arg : "-", 2000000, e);
		json_t *job = req ? broker_submit(b, req, e) : NULL;
		json_decref(req);
		if (job && !o->no_drain)
			broker_spawn_drainer(b);
		return job;
	}
	if (!strcmp(cmd, "list"))
		return list(b, o, e);
	if (!strcmp(cmd, "drain") || !strcmp(cmd, "recover")) {
		int n = !strcmp(cmd, "drain") ? broker_drain(b, e) : broker_recover(b, e);
		return n < 0 ? NULL : !strcmp(cmd, "drain") ? json_pack("{s:b}", "drained", 1) : json_pack("{s:i}", "interrupted", n);
	}
	if (!arg) {
		sbx_error_set(e, SBX_EXIT_USAGE, "usage", "%s needs a job id", cmd);
		return NULL;
	}
	if (!strcmp(cmd, "get"))
		return broker_owned(b, arg, o->session, "not-found", "NPU job not found%.0s", e);
	if (!strcmp(cmd, "logs")) {
		json_t *job = broker_owned(b, arg, o->session, "unknown", "Unknown NPU job: %s", e);
		json_t *logs = job ? json_incref(json_object_get(job, "logs")) : NULL;
		json_decref(job);
		return logs;
	}
	if (!strcmp(cmd, "result"))
		return result(b, arg, o->session, e);
	if (!strcmp(cmd, "cancel"))
		return broker_cancel(b, arg, o->session, e);
	sbx_error_set(e, SBX_EXIT_USAGE, "usage", "unknown command: %.100s", cmd);
	return NULL;
}

int main(int argc, char **argv)
{
	struct broker b = { 0 };
	struct options o = { 0 };
	struct sbx_error e;

	sbx_diag_program("sbx-broker");
	int i = parse(argc, argv, &o, &b);
	const char *cmd = argv[i], *arg = i + 1 < argc ? argv[i + 1] : NULL;
	if (broker_load_allowlist(&b, &e) != 0 || broker_store_open(&b, &e) != 0)
		sbx_die(&e);
	json_t *out = command(&b, &o, cmd, arg, &e);
	json_decref(b.workloads);
	if (!out) {
		broker_store_close(&b);
		sbx_die(&e);
	}
	int rc = sbx_json_answer(out);
	broker_store_close(&b);
	return rc;
}
