/* workspace_uid.c — the registry of workspace uids: one small file per
 * allocated uid holding "dev:ino" of its workspace, looked up and created
 * under an exclusive flock on the registry directory. */
#include "workspace_uid.h"
#include "run_as.h"
#include "exitcodes.h"
#include "fnv.h"
#include "io.h"
#include "atomic_file.h"
#include "datadir.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* A full range is searched this far at most (the hash spreads the rest). */
#define MAX_PROBES 65536u

static int bad_range(struct sbx_error *e, const char *v, const char *why)
{
	sbx_error_set(e, SBX_EXIT_USAGE, "bad-environment", "SBX_UID_RANGE: \"%.64s\" %s", v, why);
	return -1;
}

int sbx_uid_range_from_env(struct sbx_uid_range *r, uid_t shared, struct sbx_error *e)
{
	const char *v = getenv("SBX_UID_RANGE");
	r->first = 0;
	r->count = 0;
	if (v && !strcmp(v, "off"))
		return 0;
	if (!v || !*v)
		v = SBX_UID_RANGE_DEFAULT;
	char *end, *end2;
	errno = 0;
	unsigned long long first = strtoull(v, &end, 10), last = *end == '-' ? strtoull(end + 1, &end2, 10) : 0;
	if (errno || end == v || *end != '-' || *end2 || end2 == end + 1)
		return bad_range(e, v, "is not FIRST-LAST (inclusive uids) or off");
	if (first == 0 || last < first || last > 2147483647ull || last - first >= 16777216ull)
		return bad_range(e, v, "must be from 1 to 2147483647, FIRST <= LAST, at most 16777216 uids");
	if (shared >= first && shared <= last)
		return bad_range(e, v, "holds the shared sandbox uid (the egress gateway runs as it)");
	if (SBX_PROBE_UID >= first && SBX_PROBE_UID <= last)
		return bad_range(e, v, "holds uid 2147483646, which only the sandbox probe runs as");
	r->first = (uid_t)first;
	r->count = (uint32_t)(last - first + 1);
	return 0;
}

/* Whether registry entry `name` says key: 1 yes, 0 another's, -1 free. */
static int entry_is(int dirfd, const char *name, const char *key)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -1 : 0;
	char buf[64];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n == (ssize_t)strlen(key) && !memcmp(buf, key, (size_t)n);
}

int sbx_workspace_uid_registry(char *out, size_t size)
{
	char data[PATH_MAX];
	return sbx_data_dir(data, sizeof(data)) == 0 && sbx_data_path(data, SBX_DATA_WORKSPACE_UIDS, NULL, out, size) == 0 ? 0 : -1;
}

int sbx_workspace_uid_release(const char *registry_dir, int ws_fd)
{
	struct stat ws;
	char key[64], name[16];
	if (fstat(ws_fd, &ws) != 0)
		return -1;
	snprintf(key, sizeof(key), "%" PRIx64 ":%" PRIx64 "\n", (uint64_t)ws.st_dev, (uint64_t)ws.st_ino);
	snprintf(name, sizeof(name), "%u", (unsigned)ws.st_uid);
	int dirfd = open(registry_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0)
		return -1;
	int rc = -1;
	if (flock(dirfd, LOCK_EX) == 0 && entry_is(dirfd, name, key) == 1)
		rc = unlinkat(dirfd, name, 0);
	close(dirfd);
	return rc;
}

int sbx_workspace_uid(const char *registry_dir, int ws_fd, const struct sbx_uid_range *r, uid_t *out,
		      struct sbx_error *e)
{
	struct stat ws;
	char key[64], name[16];
	if (fstat(ws_fd, &ws) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "workspace-uid", "workspace: %s", strerror(errno));
		return -1;
	}
	snprintf(key, sizeof(key), "%" PRIx64 ":%" PRIx64 "\n", (uint64_t)ws.st_dev, (uint64_t)ws.st_ino);
	if (sbx_mkdir_p(registry_dir, 0700, e) != 0)
		return -1;
	int dirfd = open(registry_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0 || flock(dirfd, LOCK_EX) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "workspace-uid", "%s: %s", registry_dir, strerror(errno));
		if (dirfd >= 0)
			close(dirfd);
		return -1;
	}
	int rc = -1;
	bool io_failed = false;
	/* The uid it already has, if the registry agrees it is this workspace's
	 * (a copy made with its owner kept gets its own). */
	if (ws.st_uid >= r->first && ws.st_uid - r->first < r->count) {
		snprintf(name, sizeof(name), "%u", (unsigned)ws.st_uid);
		if (entry_is(dirfd, name, key) == 1) {
			*out = ws.st_uid;
			rc = 0;
		}
	}
	uint64_t start = sbx_fnv1a64(SBX_FNV_INIT, key, strlen(key)) % r->count;
	for (uint32_t i = 0; rc != 0 && i < r->count && i < MAX_PROBES; i++) {
		uid_t uid = r->first + (uid_t)((start + i) % r->count);
		snprintf(name, sizeof(name), "%u", (unsigned)uid);
		int is = entry_is(dirfd, name, key);
		if (is == 0)
			continue;
		if (is < 0) {
			int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (fd < 0 || sbx_write_all(fd, key, strlen(key)) != 0 || fsync(fd) != 0) {
				sbx_error_set(e, SBX_EXIT_INTERNAL, "workspace-uid", "%s/%s: %s", registry_dir, name, strerror(errno));
				if (fd >= 0)
					close(fd);
				io_failed = true;
				break;
			}
			close(fd);
		}
		*out = uid;
		rc = 0;
	}
	if (rc != 0 && !io_failed)
		sbx_error_set(e, SBX_EXIT_RESOURCE, "uid-range-full",
			      "every uid of SBX_UID_RANGE (%u from %u) belongs to another workspace", (unsigned)r->count,
			      (unsigned)r->first);
	close(dirfd);
	return rc;
}
