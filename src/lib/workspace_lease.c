/* workspace_lease.c — the workspace lease (sbx-run around a run, sbx-snap
 * around a restore or a commit of the live tree). */
#include "workspace_lease.h"
#include "atomic_file.h"
#include "exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
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

static volatile sig_atomic_t lease_timed_out;

static void on_alarm(int sig)
{
	(void)sig;
	lease_timed_out = 1;
}

static bool timed_out(void)
{
	return lease_timed_out != 0;
}

int sbx_lease_take_within(const char *state_dir, int wsfd, unsigned wait_ms, struct sbx_error *e)
{
	/* SIGALRM without SA_RESTART interrupts the flock. */
	struct sigaction sa = { .sa_handler = on_alarm };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval t = { .it_value = { .tv_sec = wait_ms / 1000, .tv_usec = (suseconds_t)(wait_ms % 1000) * 1000 + 1 } };
	lease_timed_out = 0;
	setitimer(ITIMER_REAL, &t, NULL);
	bool queued;
	int fd = sbx_lease_take(state_dir, wsfd, NULL, NULL, timed_out, &queued, e);
	struct itimerval off = { 0 };
	setitimer(ITIMER_REAL, &off, NULL);
	if (fd < 0 && !strcmp(e->code, "cancelled"))
		sbx_error_set(e, SBX_EXIT_USAGE, "busy", "Workspace is busy: a run holds its lease (waited %u ms)", wait_ms);
	return fd;
}
