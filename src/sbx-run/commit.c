/* commit.c — `sbx-run commit [--force] [--lease-wait-ms N] EXECUTION-DIR`
 * applies a speculative run's pending change to its workspace under the
 * workspace lease (waited for at most N ms when given), unless
 * the workspace changed since the run began; `sbx-run discard
 * EXECUTION-DIR` throws it away. Either ends the pending change. */
#include "run.h"
#include "apply.h"
#include "../lib/workspace_lease.h"
#include "pending.h"
#include "../lib/cli.h"
#include "../lib/clock.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/host_dir.h"
#include "../lib/json.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The workspace the run saw: its path opened again and checked to be the
 * same directory (device and inode). */
static int workspace_of(const json_t *doc, struct sbx_host_dir *ws, struct sbx_error *e)
{
	const char *path = sbx_json_string_or(doc, "workspace", "");
	struct sbx_error why;
	if (path[0] != '/' || sbx_host_dir_open(path, "workspace", ws, &why) != 0 ||
	    (json_int_t)ws->dev != json_integer_value(json_object_get(doc, "workspaceDev")) ||
	    (json_int_t)ws->ino != json_integer_value(json_object_get(doc, "workspaceIno"))) {
		sbx_host_dir_close(ws);
		sbx_error_set(e, SBX_EXIT_POLICY, "workspace-gone",
			      "commit: the workspace %.600s is gone or is another directory now", path);
		return -1;
	}
	return 0;
}

/* The state directory the run's lease lives in: the execution
 * directory's parent. */
static int state_dir_of(const char *exec_dir, char *out, size_t size)
{
	char real[PATH_MAX];
	if (!realpath(exec_dir, real))
		return -1;
	char *slash = strrchr(real, '/');
	if (!slash || slash == real)
		return -1;
	*slash = '\0';
	return snprintf(out, size, "%s", real) < (int)size ? 0 : -1;
}

static json_t *counts_json(const struct apply_counts *n)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "files", (json_int_t)n->files, "directories", (json_int_t)n->dirs,
			 "symlinks", (json_int_t)n->symlinks, "removed", (json_int_t)n->removed, "skipped",
			 (json_int_t)n->skipped, "bytes", (json_int_t)n->bytes);
}

/* The first few skipped entries: the answer stays small whatever the
 * workload left (each path may be 4 KiB, six times that escaped). */
#define COMMIT_SKIPPED_LISTED 100

static json_t *skipped_head(const json_t *skipped)
{
	json_t *out = json_array();
	for (size_t i = 0; i < COMMIT_SKIPPED_LISTED && i < json_array_size(skipped); i++)
		json_array_append(out, json_array_get(skipped, i));
	return out;
}

static int commit(const char *exec_dir, int dir, json_t *doc, bool force, long wait_ms, struct sbx_error *e)
{
	struct sbx_host_dir ws = SBX_HOST_DIR_NONE;
	struct sbx_snap_scan now = { 0 };
	char state[PATH_MAX], fingerprint[72];
	bool queued;
	if (workspace_of(doc, &ws, e) != 0)
		return -1;
	if (state_dir_of(exec_dir, state, sizeof(state)) != 0) {
		sbx_host_dir_close(&ws);
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%.800s: no state directory above it", exec_dir);
		return -1;
	}
	int lease = wait_ms >= 0 ? sbx_lease_take_within(state, ws.fd, (unsigned)wait_ms, e)
				 : sbx_lease_take(state, ws.fd, NULL, NULL, NULL, &queued, e);
	int rc = -1;
	if (lease < 0 || sbx_snap_scan_at(ws.fd, &now, e) != 0)
		goto out;
	pending_fingerprint(&now, fingerprint);
	bool changed = strcmp(fingerprint, sbx_json_string_or(doc, "fingerprint", ""));
	if (changed && !force) {
		sbx_error_set(e, SBX_EXIT_POLICY, "workspace-changed",
			      "commit: the workspace changed since the speculative run began");
		sbx_error_remedy(e, "Look at the workspace and the change set, then commit with --force (over HTTP "
				    "{\"force\": true}) to apply it over what changed, or discard it.");
		goto out;
	}
	int upper = openat(dir, PENDING_DIR "/" PENDING_LAYER "/upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (upper < 0) {
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "upper-missing", "commit: " PENDING_DIR "/" PENDING_LAYER "/upper: %s",
			      strerror(errno));
		goto out;
	}
	struct apply_counts n;
	json_t *skipped = json_array();
	rc = apply_change(upper, json_string_value(json_object_get(doc, "xattrs")), ws.fd, &n, skipped, e);
	close(upper);
	if (rc == 0) {
		json_object_set_new(doc, "forced", json_boolean(changed));
		json_object_set_new(doc, "applied", counts_json(&n));
		rc = pending_close(dir, doc, "committed", e);
	}
	if (rc == 0)
		rc = sbx_json_answer(json_pack("{s:O,s:s,s:b,s:o,s:o,s:b}", "executionId", json_object_get(doc, "executionId"),
					       "state", "committed", "forced", changed, "applied", counts_json(&n), "skipped",
					       skipped_head(skipped), "skippedTruncated",
					       json_array_size(skipped) > COMMIT_SKIPPED_LISTED));
	json_decref(skipped);
out:
	sbx_snap_scan_free(&now);
	if (lease >= 0)
		close(lease);
	sbx_host_dir_close(&ws);
	return rc;
}

int run_commit_command(int argc, char **argv, bool do_commit)
{
	static const struct option opts[] = { { "force", no_argument, NULL, 'f' },
					      { "lease-wait-ms", required_argument, NULL, 'w' }, { 0 } };
	bool force = false;
	long wait_ms = -1;
	struct sbx_error e;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'f' && do_commit)
			force = true;
		else if (c == 'w' && do_commit)
			wait_ms = sbx_cli_parse_long("--lease-wait-ms", optarg, 0, 86400000);
		else
			sbx_cli_bad_option("sbx-run", argv[optind - 1]);
	}
	if (argc - optind != 1)
		sbx_cli_usage_error("sbx-run", do_commit ? "commit takes one EXECUTION-DIR" : "discard takes one EXECUTION-DIR");
	const char *exec_dir = argv[optind];
	int dir = pending_lock(exec_dir, true, &e);
	json_t *doc = dir >= 0 ? pending_read(dir, &e) : NULL;
	int rc = doc ? 0 : -1;
	const char *state = json_string_value(json_object_get(doc, "state"));
	if (rc == 0 && pending_expired(doc, sbx_wall_ms())) {
		rc = pending_close(dir, doc, "expired", &e);
		state = "expired";
	}
	if (rc == 0 && strcmp(state, "pending")) {
		sbx_error_set(&e, SBX_EXIT_POLICY, "not-pending", "the change is no longer pending: it was %s", state);
		rc = -1;
	}
	if (rc == 0 && !do_commit) {
		rc = pending_close(dir, doc, "discarded", &e);
		if (rc == 0 && sbx_json_answer(json_pack("{s:O,s:s}", "executionId", json_object_get(doc, "executionId"),
							 "state", "discarded")) != SBX_EXIT_OK) {
			sbx_error_set(&e, SBX_EXIT_INTERNAL, "write-failed", "discard: cannot write the answer");
			rc = -1;
		}
	} else if (rc == 0) {
		rc = commit(exec_dir, dir, doc, force, wait_ms, &e);
	}
	/* Everything freed before a failure exits: LeakSanitizer does not
	 * count a local a noreturn call no longer needs as reachable. */
	json_decref(doc);
	if (dir >= 0)
		close(dir);
	if (rc != 0)
		sbx_die(&e);
	return SBX_EXIT_OK;
}
