/* fork.c — new workspaces from one version of another: each an empty
 * directory filled from the store by clones (never a link into it), with
 * its own uid from SBX_UID_RANGE (as root) and its own ref, whose first
 * version is the one it was made from. Every fork counts in full against
 * the disk, as a workload may rewrite every byte it shares. */
#include "snap.h"
#include "../lib/beneath.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "../lib/run_as.h"
#include "../lib/snap_history.h"
#include "../lib/tree_remove.h"
#include "../lib/workspace_uid.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

struct forks {
	struct target t[FORK_MAX];
	char ref[FORK_MAX][SBX_SNAP_WS_REF_MAX];
	bool made[FORK_MAX], pointed[FORK_MAX];
	size_t n;
	char registry[PATH_MAX];
	bool uids;
};

bool snap_dir_empty(int fd)
{
	int listfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = listfd >= 0 ? fdopendir(listfd) : NULL;
	bool empty = d != NULL;
	for (struct dirent *de; d && (de = readdir(d));)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = false;
	if (d)
		closedir(d);
	else if (listfd >= 0)
		close(listfd);
	return empty;
}

/* The targets: --into paths made here (each must not exist), or
 * --into-fd directories the caller made (each must be empty). */
static int open_targets(const struct args *a, struct forks *f, struct sbx_error *e)
{
	f->n = (size_t)(a->n_into ? a->n_into : a->n_into_fd);
	for (size_t i = 0; i < f->n; i++) {
		int fd;
		if (a->n_into) {
			if (mkdir(a->into[i], 0755) != 0) {
				sbx_error_set(e, SBX_EXIT_USAGE, errno == EEXIST ? "exists" : "bad-path", "%.300s: %s",
					      a->into[i], errno == EEXIST ? "a fork's directory must not exist yet" : strerror(errno));
				return -1;
			}
			f->made[i] = true;
			fd = open(a->into[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		} else {
			fd = openat(a->into_fd[i], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		}
		f->t[i].fd = fd;
		if (fd < 0 || !snap_dir_empty(fd)) {
			sbx_error_set(e, SBX_EXIT_USAGE, fd < 0 ? "bad-path" : "not-empty", "fork target %zu: %s", i + 1,
				      fd < 0 ? strerror(errno) : "not an empty directory");
			return -1;
		}
		for (size_t k = 0; k < i; k++)
			if (sbx_same_file(f->t[k].fd, fd))
				return sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "fork targets %zu and %zu are one directory",
						     k + 1, i + 1), -1;
	}
	return 0;
}

/* As root, each fork its own uid (with the sandbox gid) and everything in
 * it made as that owner; otherwise everything is the caller's. */
static int assign_uids(struct forks *f, struct sbx_error *e)
{
	struct sbx_run_as who;
	struct sbx_uid_range range;
	if (geteuid() != 0)
		return 0;
	if (sbx_run_as_resolve(NULL, &who, e) != 0 || sbx_uid_range_from_env(&range, who.uid, e) != 0)
		return -1;
	if (range.count && sbx_workspace_uid_registry(f->registry, sizeof(f->registry)) != 0)
		return sbx_error_set(e, SBX_EXIT_USAGE, "path-too-long", "data directory path too long"), -1;
	f->uids = range.count != 0;
	for (size_t i = 0; i < f->n; i++) {
		struct target *t = &f->t[i];
		t->uid = who.uid;
		t->gid = who.gid;
		t->chown = true;
		if (f->uids && sbx_workspace_uid(f->registry, t->fd, &range, &t->uid, e) != 0)
			return -1;
		if (fchown(t->fd, t->uid, t->gid) != 0)
			return sbx_error_set(e, SBX_EXIT_INTERNAL, "chown", "fork %zu: %s", i + 1, strerror(errno)), -1;
	}
	return 0;
}

/* What a fork costs the disk when every byte is its own: each file's
 * blocks, each directory's one. */
static uint64_t charged_of(const json_t *entries, uint64_t block, uint64_t *bytes, uint64_t *files)
{
	uint64_t charged = block; /* the fork's root */
	size_t i;
	json_t *row;
	*bytes = *files = 0;
	json_array_foreach(entries, i, row) {
		const char *type = sbx_json_string_or(row, "type", "");
		uint64_t size = (uint64_t)json_integer_value(json_object_get(row, "size"));
		if (!strcmp(type, "file")) {
			*bytes += size;
			(*files)++;
			charged += (size + block - 1) / block * block;
		} else if (!strcmp(type, "dir")) {
			charged += block;
		}
	}
	return charged;
}

/* The quota (each fork's own) and the disk (all of them, in full). */
static int check_room(const struct args *a, const struct forks *f, uint64_t bytes, uint64_t charged,
		      struct sbx_error *e)
{
	struct statvfs vfs;
	if (a->max_bytes && bytes > a->max_bytes) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "quota",
			      "Workspace quota exceeded: the version holds %llu bytes, each fork may hold %llu",
			      (unsigned long long)bytes, (unsigned long long)a->max_bytes);
		return -1;
	}
	if (fstatvfs(f->t[0].fd, &vfs) != 0)
		return sbx_error_set(e, SBX_EXIT_INTERNAL, "statvfs", "fork target: %s", strerror(errno)), -1;
	uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize, total = charged * (uint64_t)f->n;
	if (total > avail) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "disk-full",
			      "%zu forks of %llu bytes each need %llu bytes; the disk has %llu free", f->n,
			      (unsigned long long)charged, (unsigned long long)total, (unsigned long long)avail);
		return -1;
	}
	return 0;
}

/* A failed fork leaves nothing: its refs, uids and the directories made here. */
static void undo(const struct args *a, struct forks *f)
{
	for (size_t i = 0; i < f->n; i++) {
		if (f->t[i].fd < 0)
			continue;
		if (f->pointed[i])
			sbx_snap_history_drop(a->store, f->t[i].fd);
		if (f->uids)
			sbx_workspace_uid_release(f->registry, f->t[i].fd);
		if (f->made[i])
			sbx_remove_tree(a->into[i]);
	}
}

static json_t *answer(const struct args *a, const struct forks *f, const char *digest, uint64_t charged,
		      const struct materialized *m)
{
	json_t *list = json_array();
	json_int_t total = (json_int_t)charged * (json_int_t)f->n;
	for (size_t i = 0; i < f->n; i++) {
		json_t *one = json_pack("{s:s,s:I}", "ref", f->ref[i], "uid",
					(json_int_t)(f->t[i].chown ? f->t[i].uid : geteuid()));
		if (a->n_into)
			json_object_set_new(one, "path", json_string(a->into[i]));
		json_array_append_new(list, one);
	}
	json_t *out = json_pack("{s:s,s:o,s:I,s:I,s:I,s:I}", "digest", digest, "forks", list, "files",
				(json_int_t)m->files, "bytes", (json_int_t)m->bytes, "chargedBytes", (json_int_t)charged,
				"totalChargedBytes", total);
	json_object_set_new(out, "method", json_string(m->cloned && !m->copied ? "clone" : m->cloned ? "mixed" : "copy"));
	json_object_set_new(out, "made", snap_materialized_json(m));
	return out;
}

json_t *snap_fork(const struct args *a, const char *version, struct sbx_error *e)
{
	struct forks f = { .n = 0 };
	struct materialized m = { 0 };
	char digest[72];
	json_t *manifest = NULL, *out = NULL;
	for (size_t i = 0; i < FORK_MAX; i++)
		f.t[i].fd = -1;
	int wsfd = snap_workspace_open(a, e);
	if (wsfd < 0 || snap_version(a, wsfd, version, digest, e) != 0 ||
	    !(manifest = sbx_snap_manifest(a->store, digest, e)) || open_targets(a, &f, e) != 0)
		goto done;
	struct statvfs vfs;
	uint64_t bytes, files;
	uint64_t charged = charged_of(json_object_get(manifest, "entries"),
				      fstatvfs(f.t[0].fd, &vfs) == 0 && vfs.f_bsize ? vfs.f_bsize : 4096, &bytes, &files);
	if (check_room(a, &f, bytes, charged, e) != 0 || assign_uids(&f, e) != 0)
		goto done;
	/* Each fork's first version is its origin: from here on the store
	 * keeps what the forks are made from. */
	for (size_t i = 0; i < f.n; i++) {
		if (sbx_snap_workspace_ref(f.t[i].fd, f.ref[i], e) != 0 ||
		    sbx_snap_ref_point(a->store, f.ref[i], digest, e) != 0)
			goto done;
		f.pointed[i] = true;
	}
	if (snap_materialize(a->store, json_object_get(manifest, "entries"), f.t, f.n,
			     a->no_verify ? VERIFY_NONE : VERIFY_BESIDE, &m, e) == 0)
		out = answer(a, &f, digest, charged, &m);
done:
	if (!out)
		undo(a, &f);
	for (size_t i = 0; i < f.n; i++)
		if (f.t[i].fd >= 0)
			close(f.t[i].fd);
	if (wsfd >= 0)
		close(wsfd);
	json_decref(manifest);
	return out;
}
