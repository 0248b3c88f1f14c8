/* snap.h — what sbx-snap's files share: the command line, the workspace a
 * command is about, and one function per command. */
#ifndef SBX_SNAP_SNAP_H
#define SBX_SNAP_SNAP_H

#include "../lib/error.h"
#include "../lib/snap_store.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FORK_MAX 64                        /* forks one call makes */
#define TEXT_FILES_DEFAULT 20              /* --max-text-files */
#define TEXT_FILES_MAX 1000
#define TEXT_BYTES_DEFAULT (256 * 1024)    /* --max-text-bytes: all diffs together */
#define TEXT_BYTES_MAX (16 * 1024 * 1024)
#define TEXT_FILE_INPUT_MAX (4 * 1024 * 1024) /* a side larger than this is not diffed */
#define TEXT_MS_DEFAULT 60000              /* --max-text-ms: all diffs together */
#define TEXT_MS_MAX 600000

struct args {
	const char *store, *ref, *workspace, *state_dir;
	int workspace_fd;
	char *pos[3];
	int npos;
	uint64_t max_manifest, max_bytes;
	struct sbx_snap_gc_opts gc;
	bool gc_options, text, no_verify;
	unsigned text_files, text_bytes, text_ms, lease_wait_ms;
	const char *into[FORK_MAX];
	int into_fd[FORK_MAX];
	int n_into, n_into_fd;
};

/* workspace.c: the workspace --workspace or --workspace-fd names, as an
 * O_RDONLY directory fd (-1 with e); its ref's history; a version named
 * by the caller as a digest of it, where "live" first commits the tree as
 * it is now under the workspace lease. */
int snap_workspace_open(const struct args *a, struct sbx_error *e);
json_t *snap_versions(const struct args *a, struct sbx_error *e);
int snap_version(const struct args *a, int wsfd, const char *version, char digest[72], struct sbx_error *e);
/* The lease directory: --state-dir, else sbx-run's own by hand. */
int snap_lease(const struct args *a, int wsfd, struct sbx_error *e);
/* Commits wsfd under its ref (the lease held by the caller). */
json_t *snap_commit_workspace(const struct args *a, int wsfd, struct sbx_error *e);

/* materialize.c: entries of a manifest created below each target
 * directory, files cloned from the store (FICLONE where the filesystem
 * shares extents, else copy_file_range, else read and write), each object
 * checked against its digest once, every entry made as owner when chown. */
struct target {
	int fd;
	uid_t uid;
	gid_t gid;
	bool chown;
};
struct materialized {
	uint64_t files, dirs, symlinks, bytes, cloned, copied;
};
/* How the objects are checked: not at all (their sizes only), each before
 * its first use, or all on a thread beside the cloning (object_check.c). */
enum verify { VERIFY_NONE, VERIFY_INLINE, VERIFY_BESIDE };
int snap_materialize(const char *store, const json_t *entries, const struct target *t, size_t n, enum verify v,
		     struct materialized *m, struct sbx_error *e);

/* object_check.c: 1 when fd's content hashes to digest, 0 when not, -1
 * when it cannot be read (errno); buf is size bytes of scratch. */
int snap_object_matches(int fd, const char *digest, char *buf, size_t size);
/* The check of every object entries name, started on a thread of its
 * own, and its end: 0, or -1 with e (the first failure). */
struct object_check;
struct object_check *snap_check_start(const char *store, const json_t *entries);
int snap_check_finish(struct object_check *c, struct sbx_error *e);
json_t *snap_materialized_json(const struct materialized *m);

/* restore.c: a snapshot into an absent or empty directory; a workspace
 * reset in place to one of its versions. */
int snap_restore_into(const char *store, const char *digest, const char *dir, struct sbx_error *e);
json_t *snap_reset(const struct args *a, const char *version, struct sbx_error *e);

/* diff.c: the paths whose entries differ between two manifests' entry
 * lists (both sorted by path), in path order: visit(a, b) with a or b
 * NULL where the path is on one side only; a visit's nonzero return
 * stops the walk and is returned. */
int snap_changes(const json_t *a, const json_t *b, int (*visit)(const json_t *a, const json_t *b, void *arg),
		 void *arg);
/* diff.c: two snapshots compared (entries with sizes and types, and with
 * --text a unified diff of text files, bounded). */
json_t *snap_diff(const struct args *a, const char *from, const char *to, struct sbx_error *e);
/* text_diff.c: `diff -u` of two stored objects (NULL: empty) as a string
 * of at most *budget bytes (reduced by what it used), given at most
 * timeout_ms; NULL and a reason ("binary", "too-large", "budget",
 * "too-slow") when there is none. */
json_t *snap_text_diff(const char *store, const char *path, const char *from, uint64_t from_size,
		       const char *to, uint64_t to_size, size_t *budget, int timeout_ms, const char **reason);

/* fork.c: N new workspaces from one version; whether a directory (any
 * fd of it, O_PATH too) holds nothing. */
json_t *snap_fork(const struct args *a, const char *version, struct sbx_error *e);
bool snap_dir_empty(int fd);

#endif
