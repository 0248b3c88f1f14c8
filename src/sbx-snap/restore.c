/* restore.c — a snapshot recreated in an empty directory, and a workspace
 * reset in place to one of its versions under its lease: the tree as it
 * is committed first (nothing is lost), only the paths that differ
 * removed and made again, and the result committed as a new version that
 * must be the one asked for. */
#include "snap.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "../lib/snap_history.h"
#include "../lib/tree_remove.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int snap_restore_into(const char *store, const char *digest, const char *dir, struct sbx_error *e)
{
	json_t *m = sbx_snap_manifest(store, digest, e);
	if (!m)
		return -1;
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%.300s: %s", dir, strerror(errno));
		json_decref(m);
		return -1;
	}
	int rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	int rc = -1;
	struct materialized done;
	if (rootfd < 0)
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%.300s: %s", dir, strerror(errno));
	else if (!snap_dir_empty(rootfd))
		sbx_error_set(e, SBX_EXIT_USAGE, "not-empty", "%.300s: restore needs an absent or empty directory", dir);
	else {
		struct target t = { .fd = rootfd };
		rc = snap_materialize(store, json_object_get(m, "entries"), &t, 1, VERIFY_INLINE, &done, e);
	}
	if (rootfd >= 0)
		close(rootfd);
	json_decref(m);
	return rc;
}

/* The reset's plan: what goes, and the target's rows to make. */
struct plan {
	int wsfd;
	json_t *make;
	size_t removed;
	struct sbx_error *e;
};

/* A path that differs: what is there goes (a directory with all it
 * holds); the target's entry, if any, is made again afterwards. */
static int plan_path(const json_t *have, const json_t *want, void *arg)
{
	struct plan *p = arg;
	const char *path = sbx_json_string_or(have ? have : want, "path", "");
	/* A path only the target has may still hold what no snapshot
	 * records (a FIFO, a socket): it goes too. */
	int rc = sbx_remove_tree_beneath(p->wsfd, path);
	if (rc != 0 && errno != ENOENT) {
		sbx_error_set(p->e, SBX_EXIT_INTERNAL, "restore-write", "%.300s: cannot remove: %s", path, strerror(errno));
		return -1;
	}
	p->removed += have != NULL;
	if (want)
		json_array_append(p->make, (json_t *)want);
	return 0;
}

static json_t *reset_to(const struct args *a, int wsfd, const char *target, struct sbx_error *e)
{
	json_t *before = snap_commit_workspace(a, wsfd, e), *have = NULL, *want = NULL, *after = NULL, *out = NULL;
	const char *previous = before ? sbx_json_string_or(before, "digest", "") : "";
	struct plan p = { .wsfd = wsfd, .make = json_array(), .e = e };
	struct materialized made = { 0 };
	struct stat st;
	if (!before || !(have = sbx_snap_manifest(a->store, previous, e)) || !(want = sbx_snap_manifest(a->store, target, e)))
		goto done;
	if (strcmp(previous, target) != 0) {
		/* Made as the workspace's owner (its own uid under root). */
		struct target t = { .fd = wsfd, .chown = geteuid() == 0 && fstat(wsfd, &st) == 0 };
		if (t.chown) {
			t.uid = st.st_uid;
			t.gid = st.st_gid;
		}
		if (snap_changes(json_object_get(have, "entries"), json_object_get(want, "entries"), plan_path, &p) != 0 ||
		    snap_materialize(a->store, p.make, &t, 1, a->no_verify ? VERIFY_NONE : VERIFY_INLINE, &made, e) != 0 ||
		    !(after = snap_commit_workspace(a, wsfd, e)))
			goto done;
		if (strcmp(sbx_json_string_or(after, "digest", ""), target) != 0) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "restore-mismatch",
				      "the restored tree is %s, not %s: something else wrote to the workspace meanwhile",
				      sbx_json_string_or(after, "digest", ""), target);
			goto done;
		}
	}
	out = json_pack("{s:s,s:s,s:b,s:I,s:o}", "digest", target, "previous", previous, "changed",
			strcmp(previous, target) != 0, "removed", (json_int_t)p.removed, "made",
			snap_materialized_json(&made));
done:
	json_decref(before);
	json_decref(have);
	json_decref(want);
	json_decref(after);
	json_decref(p.make);
	return out;
}

json_t *snap_reset(const struct args *a, const char *version, struct sbx_error *e)
{
	char target[72], ref[SBX_SNAP_WS_REF_MAX];
	int wsfd = snap_workspace_open(a, e), lease = -1;
	json_t *out = NULL, *h = NULL;
	/* The version is resolved against the history before the lease: the
	 * commit made under it adds the tree as it is, never removes one. */
	if (wsfd < 0 || sbx_snap_workspace_ref(wsfd, ref, e) != 0 || !(h = sbx_snap_history(a->store, wsfd, e)) ||
	    sbx_snap_history_resolve(h, version, target, e) != 0 || (lease = snap_lease(a, wsfd, e)) < 0)
		goto done;
	out = reset_to(a, wsfd, target, e);
	if (out)
		json_object_set_new(out, "ref", json_string(ref));
done:
	json_decref(h);
	if (lease >= 0)
		close(lease);
	if (wsfd >= 0)
		close(wsfd);
	return out;
}
