/* workspace_owner.c — an fd-relative walk that chowns what is not ours. */
#include "workspace_owner.h"
#include "exitcodes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct walk {
	uid_t uid;
	gid_t gid;
	dev_t dev;
	long changed;
	struct sbx_error *e;
};

static int fix(struct walk *w, int dirfd, const char *name, const struct stat *st)
{
	if (st->st_uid == w->uid && st->st_gid == w->gid)
		return 0;
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1)
		return 0;
	if (fchownat(dirfd, name, w->uid, w->gid, AT_SYMLINK_NOFOLLOW) != 0 && errno != ENOENT) {
		sbx_error_set(w->e, SBX_EXIT_INTERNAL, "chown-failed", "workspace: cannot chown %.200s: %s",
			      name, strerror(errno));
		return -1;
	}
	w->changed++;
	return 0;
}

static int walk_dir(struct walk *w, int dirfd, int depth)
{
	if (depth > SBX_WORKSPACE_MAX_DEPTH) {
		sbx_error_set(w->e, SBX_EXIT_USAGE, "workspace-too-deep",
			      "workspace: directories nested deeper than %d", SBX_WORKSPACE_MAX_DEPTH);
		return -1;
	}
	int listfd = dup(dirfd);
	DIR *dir = listfd >= 0 ? fdopendir(listfd) : NULL;
	if (!dir) {
		if (listfd >= 0)
			close(listfd);
		sbx_error_set(w->e, SBX_EXIT_INTERNAL, "walk-failed", "workspace: cannot list: %s", strerror(errno));
		return -1;
	}
	int rc = 0;
	for (struct dirent *de; rc == 0 && (de = readdir(dir));) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue; /* vanished meanwhile */
		if (st.st_dev != w->dev)
			continue; /* another filesystem mounted inside: not ours to change */
		rc = fix(w, dirfd, de->d_name, &st);
		if (rc == 0 && S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				rc = walk_dir(w, sub, depth + 1);
				close(sub);
			}
		}
	}
	closedir(dir);
	return rc;
}

long sbx_workspace_own(const char *root, uid_t uid, gid_t gid, struct sbx_error *e)
{
	struct walk w = { .uid = uid, .gid = gid, .e = e };
	struct stat st;
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) != 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "workspace: %.300s: %s", root, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	w.dev = st.st_dev;
	int rc = 0;
	if (st.st_uid != uid || st.st_gid != gid) {
		if (fchown(fd, uid, gid) != 0) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "chown-failed", "workspace: cannot chown %.300s: %s",
				      root, strerror(errno));
			rc = -1;
		} else {
			w.changed++;
		}
	}
	if (rc == 0)
		rc = walk_dir(&w, fd, 1);
	close(fd);
	return rc == 0 ? w.changed : -1;
}
