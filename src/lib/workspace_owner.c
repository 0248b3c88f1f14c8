/* workspace_owner.c — fd-relative walks of a workspace: chown what is not
 * the workload's before a run, clear set-uid/set-gid bits after it. */
#include "workspace_owner.h"
#include "exitcodes.h"
#include "tree_remove.h"

#include <dirent.h>
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
	dev_t dev;
	long changed, removed;
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

/* A directory deeper than the bound, after a run (the sandbox is gone):
 * removed, however deep, through fds (tree_remove.c), never followed. */
static int remove_too_deep(struct walk *w, int dirfd, const char *name)
{
	if (sbx_remove_tree_at(dirfd, name) != 0 && errno != ENOENT)
		return -1;
	w->removed++;
	return 0;
}

static int walk_dir(struct walk *w, int dirfd, int depth)
{
	int listfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = listfd >= 0 ? fdopendir(listfd) : NULL;
	if (!dir) {
		if (listfd >= 0)
			close(listfd);
		sbx_error_set(w->e, SBX_EXIT_INTERNAL, "walk-failed", "workspace: cannot list: %s", strerror(errno));
		return -1;
	}
	/* Subdirectories are entered once the listing is closed: one fd per
	 * level, however wide the tree. */
	char **subdirs = NULL;
	size_t n_sub = 0, cap = 0;
	int rc = 0;
	for (struct dirent *de; (rc == 0 || w->best_effort) && (de = readdir(dir));) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue; /* vanished meanwhile */
		if (st.st_dev != w->dev)
			continue; /* another filesystem mounted inside: not ours to change */
		if (w->visit(w, dirfd, de->d_name, &st) != 0)
			rc = -1;
		if (!S_ISDIR(st.st_mode))
			continue;
		if (n_sub == cap) {
			size_t grown = cap ? cap * 2 : 16;
			char **more = realloc(subdirs, grown * sizeof(*subdirs));
			if (!more) {
				sbx_error_set(w->e, SBX_EXIT_INTERNAL, "out-of-memory", "workspace: walking");
				rc = -1;
				break;
			}
			subdirs = more;
			cap = grown;
		}
		if (!(subdirs[n_sub] = strdup(de->d_name))) {
			rc = -1;
			break;
		}
		n_sub++;
	}
	closedir(dir);
	for (size_t i = 0; i < n_sub; i++) {
		if (rc == 0 || w->best_effort) {
			if (depth >= SBX_WORKSPACE_MAX_DEPTH) {
				if (!w->best_effort || remove_too_deep(w, dirfd, subdirs[i]) != 0) {
					sbx_error_set(w->e, SBX_EXIT_USAGE, "workspace-too-deep",
						      "workspace: directories nested deeper than %d levels (below %.200s)",
						      SBX_WORKSPACE_MAX_DEPTH, subdirs[i]);
					rc = -1;
				}
			} else {
				int sub = openat(dirfd, subdirs[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (sub >= 0) {
					if (walk_dir(w, sub, depth + 1) != 0)
						rc = -1;
					close(sub);
				} else if (errno != ENOENT && errno != ELOOP && errno != ENOTDIR) {
					rc = -1;
				}
			}
		}
		free(subdirs[i]);
	}
	free(subdirs);
	return rc;
}

static long walk_root(struct walk *w, int rootfd)
{
	struct stat st;
	if (fstat(rootfd, &st) != 0 || !S_ISDIR(st.st_mode)) {
		sbx_error_set(w->e, SBX_EXIT_USAGE, "bad-path", "workspace: %.300s: not a directory", w->name);
		return -1;
	}
	w->dev = st.st_dev;
	int rc = 0;
	if (w->visit == own && (st.st_uid != w->uid || st.st_gid != w->gid)) {
		if (fchownat(rootfd, "", w->uid, w->gid, AT_EMPTY_PATH) != 0) {
			sbx_error_set(w->e, SBX_EXIT_INTERNAL, "chown-failed", "workspace: cannot chown %.300s: %s",
				      w->name, strerror(errno));
			rc = -1;
		} else {
			w->changed++;
		}
	}
	if (rc == 0)
		rc = walk_dir(w, rootfd, 1);
	return rc == 0 ? w->changed : -1;
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
