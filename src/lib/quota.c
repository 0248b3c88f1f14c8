/* quota.c — the usage walk: getdents64 and fstatat relative to directory
 * fds, one reusable buffer per depth, no path strings unless an error needs
 * one, no allocation per entry on the hot path; it stops at a limit. */
#include "quota.h"
#include "beneath.h"
#include "exitcodes.h"
#include "io.h"
#include "map.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DENTS_BUF (32 * 1024)
#define MAX_DEPTH 4096

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

struct walk {
	struct sbx_usage *u;
	dev_t dev;
	uint64_t max_bytes, max_files; /* stop the walk past these; 0: never */
	struct sbx_map links;      /* (dev, ino) of non-directories with several links */
	char *bufs[MAX_DEPTH];     /* getdents buffers, one per depth, reused */
	const char *names[MAX_DEPTH]; /* the directory names down to here */
	const char *root;
};

static void report(struct walk *w, int depth, const char *name, int err)
{
	w->u->errors_total++;
	if (json_array_size(w->u->errors) >= SBX_QUOTA_MAX_ERRORS)
		return;
	/* Only now is a path string built. */
	char path[8192];
	size_t n = (size_t)snprintf(path, sizeof(path), "%s", w->root);
	for (int i = 1; i <= depth && n < sizeof(path); i++)
		n += (size_t)snprintf(path + n, sizeof(path) - n, "/%s", w->names[i]);
	if (name && n < sizeof(path))
		snprintf(path + n, sizeof(path) - n, "/%s", name);
	json_array_append_new(w->u->errors, json_pack("{s:s,s:s}", "path", path, "error", strerror(err)));
}

/* What one inode costs: its allocation, or its apparent size where that is
 * larger (a sparse file, a symlink or directory the filesystem keeps
 * inline) — the bytes a copy or a snapshot of it would hold. */
static void charge(struct walk *w, const struct stat *st)
{
	uint64_t disk = (uint64_t)st->st_blocks * 512, size = st->st_size > 0 ? (uint64_t)st->st_size : 0;

	w->u->inodes++;
	w->u->disk_bytes += disk;
	w->u->charged_bytes += size > disk ? size : disk;
	if (w->max_bytes && w->u->charged_bytes > w->max_bytes)
		w->u->stopped = true;
}

/* A non-directory: counted once however many names it has. */
static void count_inode(struct walk *w, const struct stat *st)
{
	if (st->st_nlink > 1) {
		uint64_t key[2] = { (uint64_t)st->st_dev, (uint64_t)st->st_ino };
		bool seen = false;
		sbx_map_put(&w->links, key, sizeof(key), NULL, &seen);
		if (seen) {
			w->u->hardlinks_deduped++;
			return;
		}
	}
	if (S_ISREG(st->st_mode)) {
		w->u->files++;
		w->u->bytes += (uint64_t)st->st_size;
	} else if (S_ISLNK(st->st_mode)) {
		w->u->symlinks++;
	} else {
		w->u->other++;
	}
	charge(w, st);
}

static void walk_dir(struct walk *w, int dirfd, int depth);

static void visit_dir(struct walk *w, int dirfd, const char *name, int depth)
{
	struct stat st;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		report(w, depth, name, errno);
		return;
	}
	if (fstat(fd, &st) != 0 || st.st_dev != w->dev) { /* a mount point: not ours */
		close(fd);
		return;
	}
	w->u->dirs++;
	charge(w, &st);
	if ((unsigned)depth + 1 > w->u->max_depth)
		w->u->max_depth = (unsigned)depth + 1;
	if (depth + 1 >= MAX_DEPTH) {
		report(w, depth, name, ELOOP);
	} else {
		w->names[depth + 1] = name;
		walk_dir(w, fd, depth + 1);
	}
	close(fd);
}

static void visit_other(struct walk *w, int dirfd, const char *name, int depth)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno != ENOENT) /* vanished meanwhile: not an error */
			report(w, depth, name, errno);
		return;
	}
	if (st.st_dev != w->dev)
		return;
	if (S_ISDIR(st.st_mode))
		visit_dir(w, dirfd, name, depth);
	else
		count_inode(w, &st);
}

static void walk_dir(struct walk *w, int dirfd, int depth)
{
	if (!w->bufs[depth] && !(w->bufs[depth] = malloc(DENTS_BUF))) {
		report(w, depth, NULL, ENOMEM);
		return;
	}
	char *buf = w->bufs[depth];
	for (;;) {
		long n = syscall(SYS_getdents64, dirfd, buf, DENTS_BUF);
		if (n < 0) {
			report(w, depth, NULL, errno);
			return;
		}
		if (n == 0)
			return;
		for (long off = 0; off < n && !w->u->stopped;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			off += d->d_reclen;
			const char *name = d->d_name;
			if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
				continue;
			/* Every name counts, even one that vanishes or cannot be
			 * stat'ed: the cap bounds the walk itself. */
			if (++w->u->entries > w->max_files && w->max_files) {
				w->u->stopped = true;
				return;
			}
			if (d->d_type == DT_DIR)
				visit_dir(w, dirfd, name, depth);
			else /* symlinks too: their blocks count */
				visit_other(w, dirfd, name, depth);
		}
		if (w->u->stopped)
			return;
	}
}

/* The walk below rootfd; display names the root in error paths. */
static int usage_at(int rootfd, const char *display, uint64_t max_bytes, uint64_t max_files, struct sbx_usage *u,
		    struct sbx_error *e)
{
	struct walk *w = calloc(1, sizeof(*w));
	struct stat st;

	memset(u, 0, sizeof(*u));
	u->errors = json_array();
	/* A description of its own: getdents64 does not move rootfd's offset. */
	int fd = w ? sbx_reopen_dir(rootfd, &st) : -1;
	if (fd < 0) {
		sbx_error_set(e, w ? SBX_EXIT_USAGE : SBX_EXIT_INTERNAL, "bad-path", "%.300s: %s", display,
			      strerror(w ? errno : ENOMEM));
		free(w);
		return -1;
	}
	w->u = u;
	w->max_bytes = max_bytes;
	w->max_files = max_files;
	w->dev = st.st_dev;
	w->root = display;
	sbx_map_init(&w->links);
	walk_dir(w, fd, 0);
	close(fd);
	for (int i = 0; i < MAX_DEPTH && w->bufs[i]; i++)
		free(w->bufs[i]);
	sbx_map_free(&w->links, NULL);
	free(w);
	return 0;
}

int sbx_quota_usage_at(int rootfd, struct sbx_usage *u, struct sbx_error *e)
{
	return usage_at(rootfd, ".", 0, 0, u, e);
}

int sbx_quota_usage_capped_at(int rootfd, uint64_t max_bytes, uint64_t max_files, struct sbx_usage *u,
			      struct sbx_error *e)
{
	return usage_at(rootfd, ".", max_bytes, max_files, u, e);
}

int sbx_quota_usage(const char *root, struct sbx_usage *u, struct sbx_error *e)
{
	struct stat st;
	int fd = sbx_open_walk_root(root, &st, e);
	if (fd < 0) {
		memset(u, 0, sizeof(*u));
		u->errors = json_array();
		return -1;
	}
	int rc = usage_at(fd, root, 0, 0, u, e);
	close(fd);
	return rc;
}

json_t *sbx_usage_json(const struct sbx_usage *u)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:O,s:I}", "bytes", (json_int_t)u->bytes,
			 "diskBytes", (json_int_t)u->disk_bytes, "chargedBytes", (json_int_t)u->charged_bytes,
			 "inodes", (json_int_t)u->inodes, "entries", (json_int_t)u->entries,
			 "files", (json_int_t)u->files, "dirs", (json_int_t)u->dirs,
			 "symlinks", (json_int_t)u->symlinks, "other", (json_int_t)u->other,
			 "hardlinksDeduped", (json_int_t)u->hardlinks_deduped, "errors", u->errors,
			 "errorsTotal", (json_int_t)u->errors_total);
}

void sbx_usage_free(struct sbx_usage *u)
{
	json_decref(u->errors);
	u->errors = NULL;
}

void sbx_quota_message(bool during, uint64_t limit, char *out, size_t size)
{
	snprintf(out, size, "Workspace %s the %llu byte execution quota (current limit from system quota "
		 "settings / SCIENCE_AGENT_MAX_WORKSPACE_BYTES; set to 0 for unlimited)",
		 during ? "exceeded" : "exceeds", (unsigned long long)limit);
}

void sbx_quota_files_message(bool during, uint64_t limit, char *out, size_t size)
{
	snprintf(out, size, "Workspace %s the %llu file execution quota (every name counts: files, directories, "
		 "symlinks, each hard link; current limit from maxWorkspaceFiles / SCIENCE_AGENT_MAX_WORKSPACE_FILES; "
		 "set to 0 for unlimited)", during ? "exceeded" : "exceeds", (unsigned long long)limit);
}
