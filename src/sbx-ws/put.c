/* put.c — a file published into a workspace after every check: the body
 * (stdin, copied to a staging file under <data>/runner-uploads while it is
 * hashed, or a staged file passed as an fd) matches --size and --sha256,
 * the workspace stays within its quota, and only then is it linked (reject:
 * atomic against a concurrent creator) or renamed (overwrite) onto its
 * name, inside a parent opened with no symlink on the way. */
#include "ws.h"
#include "../lib/beneath.h"
#include "../lib/exitcodes.h"
#include "../lib/hash.h"
#include "../lib/io.h"
#include "../lib/quota.h"
#include "../lib/uuid.h"
#include "../lib/datadir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_CHUNK (256u << 10)

static const char *const NO_SYMLINKS = "Remote workspace path must not contain symbolic links";
static char staged_name[PATH_MAX]; /* stdin's staging file, removed at exit */

static void remove_staged(void)
{
	if (staged_name[0])
		unlink(staged_name);
}

/* Hashes fd from offset 0 (its bytes as they are now). */
static int hash_fd(int fd, char sha[SBX_SHA256_HEX_LEN + 1])
{
	struct sbx_sha256 *h = sbx_sha256_new();
	char *buf = malloc(COPY_CHUNK);
	off_t off = 0;
	ssize_t n = 1;
	while (h && buf && (n = pread(fd, buf, COPY_CHUNK, off)) > 0) {
		sbx_sha256_update(h, buf, (size_t)n);
		off += n;
	}
	free(buf);
	if (h)
		sbx_sha256_final(h, sha);
	return h && buf && n == 0 ? 0 : -1;
}

/* stdin copied to a new staging file (capped at cap bytes, 0: none),
 * hashed on the way; its fd. */
static int stage_stdin(const struct ws_opts *o, unsigned long long cap, char sha[SBX_SHA256_HEX_LEN + 1],
		       struct sbx_error *e)
{
	char dir[PATH_MAX + 32];
	sbx_data_path(o->data, SBX_DATA_RUNNER_UPLOADS, NULL, dir, sizeof(dir));
	mkdir(dir, 0700);
	if (snprintf(staged_name, sizeof(staged_name), "%s/upload-XXXXXX", dir) >= (int)sizeof(staged_name)) {
		staged_name[0] = '\0';
		sbx_error_set(e, SBX_EXIT_USAGE, "stage", "Cannot stage the upload: %s", strerror(ENAMETOOLONG));
		return -1;
	}
	int fd = mkostemp(staged_name, O_CLOEXEC);
	if (fd < 0) {
		staged_name[0] = '\0';
		sbx_error_set(e, SBX_EXIT_USAGE, "stage", "Cannot stage the upload: %s", strerror(errno));
		return -1;
	}
	atexit(remove_staged);
	struct sbx_sha256 *h = sbx_sha256_new();
	char *buf = malloc(COPY_CHUNK);
	unsigned long long total = 0;
	ssize_t n = 1;
	bool over = false;
	while (h && buf && (n = read(STDIN_FILENO, buf, COPY_CHUNK)) > 0) {
		if (cap && total + (unsigned long long)n > cap) {
			over = true;
			break;
		}
		if (sbx_write_all(fd, buf, (size_t)n) != 0) {
			n = -1;
			break;
		}
		sbx_sha256_update(h, buf, (size_t)n);
		total += (unsigned long long)n;
	}
	free(buf);
	if (h)
		sbx_sha256_final(h, sha);
	if (over) {
		close(fd);
		if (o->size >= 0)
			sbx_error_set(e, SBX_EXIT_USAGE, "size-mismatch", "The body is longer than --size (%lld bytes)", o->size);
		else
			sbx_error_set(e, SBX_EXIT_RESOURCE, "too-large", "Request body exceeds the %lld byte limit", o->max_bytes);
		return -1;
	}
	if (!h || !buf || n < 0) {
		close(fd);
		sbx_error_set(e, SBX_EXIT_USAGE, "stage", "Cannot stage the upload: %s", strerror(errno));
		return -1;
	}
	return fd;
}

/* What the upload would make the workspace hold, against the quota. */
static bool within_quota(long long max, int dir, int parent, const char *leaf, unsigned long long incoming)
{
	struct sbx_usage u;
	struct sbx_error e;
	struct stat st;
	if (max <= 0)
		return true;
	if (sbx_quota_usage_at(dir, &u, &e) != 0)
		return false;
	/* A walk that could not see everything (an fd limit below a deep
	 * tree, an unreadable directory) cannot vouch for the quota. */
	bool whole = u.errors_total == 0 && !u.stopped;
	unsigned long long total = u.charged_bytes; /* as a run's quota counts */
	sbx_usage_free(&u);
	if (!whole)
		return false;
	if (fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
		unsigned long long size = (unsigned long long)st.st_size, disk = (unsigned long long)st.st_blocks * 512;
		unsigned long long charged = size > disk ? size : disk;
		total -= charged < total ? charged : total;
	}
	return total + incoming <= (unsigned long long)max;
}

/* The staged file's bytes copied into a new file created in parent (a
 * random name, O_EXCL | O_NOFOLLOW), given its mode and synced: name
 * holds it. For a workspace on another filesystem than the staging file. */
static int copy_in(int staged, unsigned long long bytes, int parent, mode_t mode, char *name, size_t size)
{
	sbx_uuid4(".sbx-upload-", name, size);
	int fd = openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	off_t off = 0;
	ssize_t n = 1;
	while ((unsigned long long)off < bytes && (n = sendfile(fd, staged, &off, bytes - (unsigned long long)off)) > 0)
		;
	int ok = (n > 0 || !bytes) && fchmod(fd, mode) == 0 && fsync(fd) == 0;
	int saved = n == 0 && bytes ? EIO : errno; /* the staging file ended early */
	close(fd);
	if (ok)
		return 0;
	unlinkat(parent, name, 0);
	return errno = saved, -1;
}

/* The staged file (by its fd: no name is resolved again) linked onto
 * leaf, or, overwriting, linked under a random name and renamed there. */
static int place(int staged, unsigned long long bytes, int parent, const char *leaf, bool overwrite, mode_t mode)
{
	char self[64], name[64];
	if (fchmod(staged, mode) != 0 || fsync(staged) != 0)
		return -1;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", staged);
	sbx_uuid4(".sbx-upload-", name, sizeof(name));
	const char *first = overwrite ? name : leaf;
	if (linkat(AT_FDCWD, self, parent, first, AT_SYMLINK_FOLLOW) != 0) {
		if (errno != EXDEV && errno != ENOENT)
			return -1;
		if (copy_in(staged, bytes, parent, mode, name, sizeof(name)) != 0)
			return -1;
		if (!overwrite) {
			int rc = linkat(parent, name, parent, leaf, 0);
			int saved = errno;
			unlinkat(parent, name, 0);
			return errno = saved, rc;
		}
	}
	if (!overwrite)
		return 0;
	int rc = renameat(parent, name, parent, leaf);
	int saved = errno;
	if (rc != 0)
		unlinkat(parent, name, 0);
	return errno = saved, rc;
}

int ws_put(const struct ws_opts *o, const char *raw_key, const char *raw_path, struct sbx_error *e)
{
	char key[SBX_REMOTE_KEY_MAX + 1], rel[SBX_REMOTE_PATH_MAX + 1], sha[SBX_SHA256_HEX_LEN + 1] = "";
	/* Refused before any byte is read: nothing is staged or made. */
	if (!sbx_remote_key(raw_key, key, sizeof(key))) {
		sbx_error_set(e, SBX_EXIT_USAGE, "invalid-key", "Invalid remote workspace key");
		return -1;
	}
	if (!ws_rel_path(raw_path, rel, e))
		return -1;
	int staged;
	struct stat st;
	if (o->from_fd >= 0) {
		staged = o->from_fd;
		if (fstat(staged, &st) != 0 || !S_ISREG(st.st_mode)) {
			sbx_error_set(e, SBX_EXIT_USAGE, "from-fd", "--from-fd: not an open regular file");
			return -1;
		}
		if (o->sha256 && hash_fd(staged, sha) != 0) {
			sbx_error_set(e, SBX_EXIT_USAGE, "stage", "Cannot read the upload: %s", strerror(errno));
			return -1;
		}
	} else {
		unsigned long long cap = o->size >= 0 ? (unsigned long long)o->size : (unsigned long long)o->max_bytes;
		if ((staged = stage_stdin(o, cap, sha, e)) < 0)
			return -1;
		fstat(staged, &st);
	}
	unsigned long long bytes = (unsigned long long)st.st_size;
	if (o->size >= 0 && bytes != (unsigned long long)o->size) {
		sbx_error_set(e, SBX_EXIT_USAGE, "size-mismatch", "The body's size does not match --size");
		return -1;
	}
	if (o->sha256 && strcmp(sha, o->sha256) != 0) {
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "sha256-mismatch", "The body does not match --sha256");
		return -1;
	}
	char clean[SBX_REMOTE_KEY_MAX + 1];
	int dir = ws_open(o->data, key, true, clean, e);
	if (dir < 0)
		return -1;
	const char *leaf = NULL;
	int parent = sbx_beneath_parent(dir, rel, true, &leaf);
	int saved = errno, rc = -1;
	if (parent < 0)
		sbx_error_set(e, SBX_EXIT_USAGE, saved == ELOOP || saved == ENOTDIR || saved == EXDEV ? "symlink" : "create", "%s",
			      saved == ELOOP || saved == ENOTDIR || saved == EXDEV ? NO_SYMLINKS
										   : "Remote workspace path cannot be created");
	else if (fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
		sbx_error_set(e, SBX_EXIT_USAGE, "symlink", "%s", NO_SYMLINKS);
	else if (fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		sbx_error_set(e, SBX_EXIT_USAGE, "directory", "Remote workspace path is a directory: %s", rel);
	else if (!within_quota(o->max_bytes, dir, parent, leaf, bytes))
		sbx_error_set(e, SBX_EXIT_RESOURCE, "quota",
			      "Workspace exceeds the %lld byte quota with this upload (current limit from system quota "
			      "settings / SCIENCE_AGENT_MAX_WORKSPACE_BYTES; set to 0 for unlimited)",
			      o->max_bytes);
	else if (place(staged, bytes, parent, leaf, o->overwrite, o->mode) != 0)
		sbx_error_set(e, SBX_EXIT_USAGE, !o->overwrite && errno == EEXIST ? WS_CODE_EXISTS : "publish", "%s%s",
			      !o->overwrite && errno == EEXIST ? "Remote workspace file already exists" : "Cannot publish the upload: ",
			      !o->overwrite && errno == EEXIST ? "" : strerror(errno));
	else
		rc = 0;
	if (rc == 0) {
		fsync(parent);
		json_t *body = json_pack("{s:s,s:I}", "path", rel, "size", (json_int_t)bytes);
		if (sha[0])
			json_object_set_new(body, "sha256", json_string(sha));
		char *text = json_dumps(body, JSON_COMPACT);
		json_decref(body);
		printf("%s\n", text ? text : "{}");
		free(text);
	}
	if (parent >= 0)
		close(parent);
	close(dir);
	if (o->from_fd < 0)
		close(staged);
	return rc;
}
