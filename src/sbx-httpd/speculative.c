/* speculative.c — a pending change's commit and discard over HTTP: the
 * execution's run directory found, `sbx-run commit|discard` run on it,
 * its refusal said as a status. */
#include "speculative.h"
#include "body.h"
#include "metrics.h"
#include "server.h"
#include "store.h"
#include "../lib/datadir.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/stage_call.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define COMMIT_TIMEOUT_MS (30 * 60 * 1000) /* a commit waits for the workspace's lease, then copies */
#define COMMIT_LEASE_WAIT "600000"          /* ms of that for the lease: the copy is never cut short */
#define COMMIT_OUTPUT_CAP (8u << 20)
#define SWEEP_TIMEOUT_MS 60000

/* The run directory's name sbx-httpd gave it: "h" and 24 hex digits. */
static bool internal_id_ok(const char *id)
{
	return strlen(id) == 25 && id[0] == 'h' && strspn(id + 1, "0123456789abcdef") == 24;
}

bool speculative_pending(int runs_dir, const char *internal_id)
{
	char path[64];
	snprintf(path, sizeof(path), "%s/pending.json", internal_id);
	return runs_dir >= 0 && faccessat(runs_dir, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* The run directory's name for id: a managed record's result names it,
 * else id is one. 0, or a status already answered. */
static unsigned locate(struct req *r, const char *id, char internal[32], enum MHD_Result *sent)
{
	const char *session = query(r, "sessionId"), *agent = query(r, "agentId");
	json_t *rec = store_get(id, session ? session : "", agent ? agent : "", true);
	if (rec) {
		const char *state = json_string_value(json_object_get(rec, "state"));
		const char *named = json_string_value(
			json_object_get(json_object_get(json_object_get(rec, "result"), "speculative"), "id"));
		unsigned status = 0;
		if (state && (!strcmp(state, "queued") || !strcmp(state, "running")))
			*sent = reply_error(r, status = 409, "The execution has not finished");
		else if (!named || !internal_id_ok(named))
			*sent = reply_error(r, status = 404, "The execution left no pending change");
		else
			snprintf(internal, 32, "%s", named);
		json_decref(rec);
		return status;
	}
	if (!internal_id_ok(id)) {
		*sent = reply_error(r, 404, "Execution not found");
		return 404;
	}
	snprintf(internal, 32, "%s", id);
	return 0;
}

static unsigned status_of(const struct sbx_error *e)
{
	if (!strcmp(e->code, "workspace-changed") || !strcmp(e->code, "not-pending") ||
	    !strcmp(e->code, "workspace-gone") || !strcmp(e->code, "busy"))
		return 409;
	if (!strcmp(e->code, "not-speculative") || !strcmp(e->code, "not-found"))
		return 404;
	return e->exit_code == SBX_EXIT_RESOURCE ? 507 : 500;
}

enum MHD_Result handle_speculative(struct req *r, const char *id, bool commit)
{
	enum MHD_Result sent;
	char internal[32], dir[PATH_MAX + 64], leaf[64];
	bool force = false;
	if (r->len) {
		json_t *body = body_object(r, &sent);
		if (!body)
			return sent;
		json_t *f = json_object_get(body, "force");
		bool bad = f && !json_is_boolean(f);
		force = json_is_true(f);
		json_decref(body);
		if (bad)
			return reply_error(r, 400, "force: must be a boolean");
	}
	if (locate(r, id, internal, &sent))
		return sent;
	snprintf(leaf, sizeof(leaf), "runs/%s", internal);
	sbx_data_path(g_server.cfg.data_dir, SBX_DATA_RUNNER_EXECUTIONS, leaf, dir, sizeof(dir));
	const char *argv[] = { g_server.prog.run, commit ? "commit" : "discard", dir, NULL, NULL, NULL, NULL };
	if (commit) {
		size_t n = 2;
		argv[n++] = "--lease-wait-ms";
		argv[n++] = COMMIT_LEASE_WAIT;
		if (force)
			argv[n++] = "--force";
		argv[n] = dir;
	}
	struct sbx_spawn s = { .argv = argv, .stdin_fd = -1, .die_with_parent = true };
	struct sbx_error e;
	json_t *out = sbx_stage_call(&s, COMMIT_TIMEOUT_MS, COMMIT_OUTPUT_CAP, &e);
	metrics_stage_call(g_server.prog.run, out != NULL || e.exit_code == SBX_EXIT_POLICY, &e);
	if (!out)
		return reply_error(r, status_of(&e), "%s", e.message);
	json_object_set_new(out, "id", json_string(internal));
	return reply_json(r, 200, out);
}

static atomic_bool maybe_waiting; /* a speculative run ended, or a sweep found changes waiting */

void speculative_ended(void)
{
	atomic_store(&maybe_waiting, true);
}

void speculative_swept(const json_t *answer)
{
	if (json_integer_value(json_object_get(answer, "pendingWaiting")) > 0)
		atomic_store(&maybe_waiting, true);
}

void speculative_sweep(void)
{
	if (!atomic_exchange(&maybe_waiting, false))
		return;
	char runs[PATH_MAX + 64];
	struct sbx_error e;
	sbx_data_path(g_server.cfg.data_dir, SBX_DATA_RUNNER_EXECUTIONS, "runs", runs, sizeof(runs));
	const char *argv[] = { g_server.prog.run, "sweep", "--pending-only", runs, NULL };
	struct sbx_spawn s = { .argv = argv, .stdin_fd = -1, .die_with_parent = true };
	json_t *answer = sbx_stage_call(&s, SWEEP_TIMEOUT_MS, 4096, &e);
	metrics_stage_call(g_server.prog.run, answer != NULL, &e);
	if (!answer)
		sbx_diag("warning", "sweep-failed", NULL, "sbx-run sweep --pending-only: %s", e.message);
	if (!answer || json_integer_value(json_object_get(answer, "pendingWaiting")) > 0)
		atomic_store(&maybe_waiting, true);
	json_decref(answer);
}
