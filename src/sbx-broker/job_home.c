/* job_home.c — who a host job runs as and where its home is: never root
 * (the workspace's own uid, else the broker's dedicated user), with HOME,
 * TMPDIR and caches in a runner-owned per-job directory outside every
 * workspace, and its workspace inputs handed over as root-owned copies. */
#include "broker.h"
#include "../lib/beneath.h"
#include "../lib/exitcodes.h"
#include "../lib/run_as.h"
#include "../lib/text.h"
#include "../lib/tree_remove.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define INPUT_COPY_MAX (256ll << 20) /* one input copied for a job */

int broker_job_identity(const char *workspace, struct broker_job_ids *ids, struct sbx_error *e)
{
	memset(ids, 0, sizeof(*ids));
	if (geteuid() != 0)
		return 0; /* dev mode: the caller's own uid, which is not root */
	/* The workspace's owner when an execution gave it its own uid; the
	 * broker's user otherwise (SBX_BROKER_RUN_AS, else the sandbox user). */
	struct stat st;
	int fd = open(workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		sbx_error_set(e, SBX_EXIT_USAGE, "workspace", "NPU job workspace cannot be opened: %.300s", workspace);
		return -1;
	}
	close(fd);
	struct sbx_run_as who;
	if (sbx_run_as_resolve(getenv("SBX_BROKER_RUN_AS"), &who, e) != 0)
		return -1;
	ids->switch_ids = true;
	ids->uid = st.st_uid != 0 ? st.st_uid : who.uid;
	ids->gid = st.st_uid != 0 ? st.st_gid : who.gid;
	if (ids->gid == 0)
		ids->gid = who.gid;
	return 0;
}

int broker_job_home(const struct broker *b, const char *id, const struct broker_job_ids *ids, char *home,
		    size_t size, struct sbx_error *e)
{
	char homes[PATH_MAX + 16];
	snprintf(homes, sizeof(homes), "%s/homes", b->dir);
	if ((mkdir(homes, 0711) != 0 && errno != EEXIST) ||
	    snprintf(home, size, "%s/%s", homes, id) >= (int)size) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "home", "%.300s: %s", homes, strerror(errno));
		return -1;
	}
	/* Whatever an earlier run of this id left (a crash) goes first. */
	(void)sbx_remove_tree(home);
	/* The job's directory and inputs/ stay root's: the job can rename
	 * nothing in them, so root's copies land where root meant. Only
	 * home/ (HOME, caches) and tmp/ are the job's. */
	static const struct {
		const char *sub;
		mode_t mode;
		bool job_owned;
	} dirs[] = { { "", 0711, false }, { "/inputs", 0755, false }, { "/home", 0700, true }, { "/tmp", 0700, true } };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char dir[PATH_MAX + 32];
		snprintf(dir, sizeof(dir), "%s%s", home, dirs[i].sub);
		int fd = mkdir(dir, dirs[i].mode) == 0 ? open(dir, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
		bool ok = fd >= 0 && fchmod(fd, dirs[i].mode) == 0 &&
			  (!dirs[i].job_owned || !ids->switch_ids || fchown(fd, ids->uid, ids->gid) == 0);
		if (!ok) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "home", "%.300s: %s", dir, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
	}
	return 0;
}

void broker_job_home_remove(const char *home)
{
	if (home && *home)
		(void)sbx_remove_tree(home);
}

/* Copies what src holds (at most INPUT_COPY_MAX) into a new root-owned,
 * read-only file NAME of the directory dirfd. */
static int copy_fd(int src, int dirfd, const char *name)
{
	int out = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (out < 0)
		return -1;
	char buf[65536];
	long long total = 0;
	ssize_t n;
	int rc = 0;
	while (rc == 0 && (n = read(src, buf, sizeof(buf))) > 0) {
		total += n;
		if (total > INPUT_COPY_MAX) {
			errno = EFBIG;
			rc = -1;
		}
		for (ssize_t off = 0; rc == 0 && off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			rc = w > 0 ? 0 : -1;
			off += w > 0 ? w : 0;
		}
	}
	if (n < 0)
		rc = -1;
	if (rc == 0 && fchmod(out, 0444) != 0)
		rc = -1;
	close(out);
	return rc;
}

int broker_open_input(const char *workspace, const char *rel, struct stat *st)
{
	int ws = open(workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int fd = ws >= 0 ? sbx_open_beneath(ws, rel, O_RDONLY | O_NONBLOCK, SBX_BENEATH_IN_ROOT) : -1;
	if (ws >= 0)
		close(ws);
	if (fd >= 0 && (fstat(fd, st) != 0 || !S_ISREG(st->st_mode))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

char *broker_input_copy(const struct broker_template_ctx *c, const char *field, struct sbx_error *e)
{
	const char *value = json_string_value(json_object_get(c->inputs, field));
	char *rel = value ? sbx_trim_dup(value, strlen(value)) : NULL;
	char dst[PATH_MAX + 300];
	struct stat st;
	if (!rel || !*rel || rel[0] == '/' || !c->home) {
		free(rel);
		/* The upstream messages, from the check by name. */
		return broker_workspace_input(c->workload_id, c->workspace, c->inputs, field, e);
	}
	/* Opened once below the workspace's fd (symlinks that stay inside are
	 * the kernel's to follow, anything leaving is refused), read from that
	 * fd into the job's home: a swap after the check changes nothing. */
	int src = broker_open_input(c->workspace, rel, &st);
	const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	bool found = src >= 0 && *base && strcmp(base, "..") &&
		     strcmp(base, ".") && snprintf(dst, sizeof(dst), "%s/inputs/%s", c->home, base) < (int)sizeof(dst);
	char inputs[PATH_MAX + 16];
	snprintf(inputs, sizeof(inputs), "%s/inputs", c->home);
	int dir = found ? open(inputs, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	int copied = dir >= 0 ? copy_fd(src, dir, base) : -1;
	int saved = errno;
	if (dir >= 0)
		close(dir);
	if (src >= 0)
		close(src);
	free(rel);
	if (!found)
		sbx_error_set(e, SBX_EXIT_USAGE, "template", "%s must resolve inside the NPU job workspace", field);
	else if (copied != 0)
		sbx_error_set(e, SBX_EXIT_USAGE, "template", "%s cannot be copied for the NPU job: %s", field, strerror(saved));
	return found && copied == 0 ? strdup(dst) : NULL;
}
