/* env_lease.c — a fair readers/writer lease from two flocks: a turnstile
 * everyone passes, and the lease itself. */
#include "env_lease.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static int locked(const char *path, int how)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	while (fd >= 0 && flock(fd, how) != 0)
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	return fd;
}

int sbx_env_lease(const char *locks_dir, const char *id, bool exclusive)
{
	char turnstile[PATH_MAX], lease[PATH_MAX];
	if (!id || !*id || strchr(id, '/') || strlen(id) > 64 ||
	    snprintf(turnstile, sizeof(turnstile), "%s/env-%s.turnstile", locks_dir, id) >= (int)sizeof(turnstile) ||
	    snprintf(lease, sizeof(lease), "%s/env-%s.lock", locks_dir, id) >= (int)sizeof(lease))
		return -1;
	int gate = locked(turnstile, LOCK_EX);
	if (gate < 0)
		return -1;
	int fd = locked(lease, exclusive ? LOCK_EX : LOCK_SH);
	close(gate);
	return fd;
}
