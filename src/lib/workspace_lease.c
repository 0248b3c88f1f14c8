/* workspace_lease.c — the workspace lease (sbx-run around a run, sbx-snap
 * around a restore or a commit of the live tree). */
#include "workspace_lease.h"
#include "atomic_file.h"
#include "exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int sbx_lease_take(const char *state_dir, int wsfd, void (*on_wait)(void *), void *arg,
		   bool (*cancelled)(void), bool *queued, struct sbx_error *e)
{
	char dir[PATH_MAX], path[PATH_MAX + 64];
	struct stat st;

	*queued = false;
	if (fstat(wsfd, &st) != 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "workspace: %s", strerror(errno));
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s/locks", state_dir);
	if (sbx_mkdir_p(dir, 0700, e) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/ws-%llu-%llu.lock", dir, (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "lease-failed", "%s: %s", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	*queued = true;
	if (on_wait)
		on_wait(arg);
	while (flock(fd, LOCK_EX) != 0) {
		if (errno == EINTR && cancelled && cancelled()) {
			sbx_error_set(e, SBX_EXIT_CANCELLED, "cancelled", "cancelled while waiting for the workspace lease");
			close(fd);
			return -1;
		}
		if (errno != EINTR) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "lease-failed", "%s: flock: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
	}
	return fd;
}
