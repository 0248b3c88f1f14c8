/* upper_walk.h — an overlay's upper layer (a speculative run's changes)
 * read as untrusted input: every entry classified (a whiteout, a
 * directory, opaque or not, a file, a symlink, anything else) by the one
 * tree walk's rules (tree_walk.h: fd-relative, no symlink followed, one
 * filesystem, bounded). */
#ifndef SBX_RUN_UPPER_WALK_H
#define SBX_RUN_UPPER_WALK_H

#include "../lib/error.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#define UPPER_MAX_NAMES 1000000u /* names in a change set, whatever the quota allowed */
#define UPPER_MAX_DEPTH 512      /* SBX_WORKSPACE_MAX_DEPTH: deeper went with the run's end */
#define UPPER_MAX_PATH_BYTES (64u << 20) /* all its paths together: what the change set holds in memory */

enum upper_kind { UPPER_WHITEOUT, UPPER_DIR, UPPER_FILE, UPPER_SYMLINK, UPPER_OTHER };

struct upper_entry {
	const char *path;      /* relative to the upper root, '/'-separated */
	enum upper_kind kind;
	bool opaque;           /* a directory that hides all the lower layer has below it */
	int parent;            /* the directory fd it is listed in */
	const char *name;      /* its name there */
	int fd;                /* a directory: the walk's fd for it; else -1 */
	const struct stat *st; /* its lstat */
};

/* Returns 0 to go on, -1 to end the walk (e set). */
typedef int (*upper_fn)(void *ctx, const struct upper_entry *x, struct sbx_error *e);

/* Walks upper (a directory fd) pre-order, parents before what they hold.
 * xattr_ns names the overlay's marks: "trusted" (mounted as root) or
 * "user" (userxattr, mounted in a user namespace); the other namespace
 * is the workload's own data. 0, or -1 with e: an entry that cannot be
 * read, a path over PATH_MAX, more than UPPER_MAX_NAMES names or
 * UPPER_MAX_PATH_BYTES bytes of paths, or a
 * redirect or metacopy mark (the overlay is mounted without them). */
int upper_walk(int upper, const char *xattr_ns, upper_fn fn, void *ctx, struct sbx_error *e);

const char *upper_kind_name(enum upper_kind kind, const struct stat *st);

#endif
