/* workspace_owner.c — visitors of tree_walk.c over a workspace: chown what
 * is not the workload's before a run, clear set-uid/set-gid bits after it. */
#include "workspace_owner.h"
#include "exitcodes.h"
#include "tree_remove.h"
#include "tree_walk.h"

#include <stdbool.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct walk {
	uid_t uid;
	gid_t gid;
	long changed, removed;
	int rc;           /* -1 once anything failed */
	bool best_effort; /* keep going past a failure: every reachable file is visited */
	const char *name;
	struct sbx_error *e;
	/* What to do with one entry (not the root) below dirfd. */
	int (*visit)(struct walk *w, int dirfd, const char *name, const struct stat *st);
};

static int own(struct walk *w, int dirfd, const char *name, const struct stat *st)
{
	if (st->st_uid == w->uid && st->st_gid == w->gid)
		return 0;
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1)
		return 0;
	/* By name from the parent fd, never following: a swap since the
	 * fstatat changes at most the symlink itself. */
	if (fchownat(dirfd, name, w->uid, w->gid, AT_SYMLINK_NOFOLLOW) != 0 && errno != ENOENT) {
		sbx_error_set(w->e, SBX_EXIT_INTERNAL, "chown-failed", "workspace: cannot chown %.200s: %s",
			      name, strerror(errno));
		return -1;
	}
	w->changed++;
	return 0;
}

/* Everything the sandbox's uid owns becomes root's, hard links included:
 * a sandbox can link only within its own mounts, so every link of such a
 * file lies in this tree. chown clears set-id bits on the way. */
static int disown(struct walk *w, int dirfd, const char *name, const struct stat *st)
{
	if (st->st_uid != w->uid && st->st_gid != w->gid)
		return 0;
	if (fchownat(dirfd, name, 0, 0, AT_SYMLINK_NOFOLLOW) != 0 && errno != ENOENT) {
		sbx_error_set(w->e, SBX_EXIT_INTERNAL, "chown-failed", "%s: cannot give %.200s back to root: %s", w->name,
			      name, strerror(errno));
		return -1;
	}
	w->changed++;
	return 0;
}

static int clear_setid(struct walk *w, int dirfd, const char *name, const struct stat *st)
{
	if (!S_ISREG(st->st_mode) || !(st->st_mode & (S_ISUID | S_ISGID)))
		return 0;
	/* The file itself, checked again through its own fd before the chmod. */
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat now;
	if (fd < 0)
		return 0; /* gone, or replaced by a symlink: nothing of ours to clear */
	int rc = 0;
	if (fstat(fd, &now) == 0 && S_ISREG(now.st_mode) && (now.st_mode & (S_ISUID | S_ISGID))) {
		if (fchmod(fd, now.st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID)) == 0) {
			w->changed++;
		} else {
			sbx_error_set(w->e, SBX_EXIT_INTERNAL, "chmod-failed", "workspace: cannot clear set-id bits of %.200s: %s",
				      name, strerror(errno));
			rc = -1;
		}
	}
	close(fd);
	return rc;
}

/* A failure, e says what: the walk ends there unless it is best effort. */
static int failed(struct walk *w)
{
	w->rc = -1;
	return w->best_effort ? SBX_WALK_GO : SBX_WALK_STOP;
}

static int cannot_list(struct walk *w, int err)
{
	sbx_error_set(w->e, SBX_EXIT_INTERNAL, "walk-failed", "workspace: cannot list: %s", strerror(err));
	return failed(w);
}

static int visit(struct sbx_walk *tw, const struct sbx_walk_entry *x)
{
	struct walk *w = tw->ctx;
	return w->visit(w, x->parent, x->name, x->st) == 0 ? SBX_WALK_GO : failed(w);
}

/* A directory deeper than the bound, after a run (the sandbox is gone):
 * removed, however deep, through fds (tree_remove.c), never followed. */
static int too_deep(struct sbx_walk *tw, const struct sbx_walk_entry *x)
{
	struct walk *w = tw->ctx;
	if (w->best_effort && (sbx_remove_tree_at(x->parent, x->name) == 0 || errno == ENOENT)) {
		w->removed++;
		return SBX_WALK_GO;
	}
	sbx_error_set(w->e, SBX_EXIT_USAGE, "workspace-too-deep",
		      "workspace: directories nested deeper than %d levels (below %.200s)", SBX_WORKSPACE_MAX_DEPTH,
		      x->name);
	return failed(w);
}

/* An entry that vanished or was swapped for a file or a symlink is passed
 * over; a directory that cannot be opened is a failure. */
static int on_error(struct sbx_walk *tw, const struct sbx_walk_entry *x, enum sbx_walk_op op, int err)
{
	(void)x;
	if (op == SBX_WALK_STAT || (op == SBX_WALK_OPEN && (err == ENOENT || err == ELOOP || err == ENOTDIR)))
		return SBX_WALK_GO;
	return cannot_list(tw->ctx, err);
}

/* The root's filesystem only; directories down to depth
 * SBX_WORKSPACE_MAX_DEPTH - 1 are entered. */
static long walk_root(struct walk *w, int rootfd)
{
	struct stat st;
	struct sbx_walk tw = { .max_depth = SBX_WORKSPACE_MAX_DEPTH - 1, .ctx = w, .entry = visit, .too_deep = too_deep,
			       .error = on_error };
	if (fstat(rootfd, &st) != 0 || !S_ISDIR(st.st_mode)) {
		sbx_error_set(w->e, SBX_EXIT_USAGE, "bad-path", "workspace: %.300s: not a directory", w->name);
		return -1;
	}
	if (w->visit == own && (st.st_uid != w->uid || st.st_gid != w->gid)) {
		if (fchownat(rootfd, "", w->uid, w->gid, AT_EMPTY_PATH) != 0) {
			sbx_error_set(w->e, SBX_EXIT_INTERNAL, "chown-failed", "workspace: cannot chown %.300s: %s",
				      w->name, strerror(errno));
			return -1;
		}
		w->changed++;
	}
	if (sbx_walk_run(&tw, rootfd) < 0)
		cannot_list(w, errno);
	return w->rc == 0 ? w->changed : -1;
}

long sbx_workspace_own_at(int rootfd, const char *name, uid_t uid, gid_t gid, struct sbx_error *e)
{
	struct walk w = { .uid = uid, .gid = gid, .name = name, .e = e, .visit = own };
	return walk_root(&w, rootfd);
}

long sbx_tree_disown_at(int rootfd, const char *name, uid_t uid, gid_t gid, struct sbx_error *e)
{
	struct walk w = { .uid = uid, .gid = gid, .name = name, .e = e, .visit = disown };
	if (fchown(rootfd, 0, 0) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "chown-failed", "%s: cannot give it back to root: %s", name, strerror(errno));
		return -1;
	}
	return walk_root(&w, rootfd);
}

long sbx_workspace_clear_setid(int rootfd, const char *name, long *removed, struct sbx_error *e)
{
	struct walk w = { .name = name, .e = e, .visit = clear_setid, .best_effort = true };
	long rc = walk_root(&w, rootfd);
	*removed = w.removed;
	return rc;
}
