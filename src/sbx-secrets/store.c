/* store.c — the store sbx-secrets was pointed at, opened or refused, the
 * lock its writers take, and the time stamps they write. */
#include "secrets.h"
#include "../lib/clock.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>

int store_dir(const char *path, bool create)
{
	struct sbx_error e;
	int fd = sbx_secret_store_open(path, create, &e);
	if (fd == -1)
		sbx_die(&e);
	return fd;
}

void store_lock(int dirfd)
{
	struct sbx_error e;
	/* Kept open (and locked) until exit: put, rotate and rm read, change
	 * and write a secret under it, so no writer loses another's update. */
	int fd = openat(dirfd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) != 0) {
		sbx_error_set(&e, SBX_EXIT_INTERNAL, "lock-failed", "the secret store's .lock: %s", strerror(errno));
		sbx_die(&e);
	}
}

void store_now(char out[32])
{
	sbx_iso_time(sbx_wall_ms(), out);
}
