/* launch_exec.c — the last steps before bwrap runs. */
#include "launch_exec.h"
#include "exitcodes.h"
#include "launch_plan.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

void sbx_stdio_sanitize(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int n = open("/dev/null", O_RDWR);
			if (n >= 0 && n != fd)
				close(n);
		}
}

int sbx_launch_exec(const char *bwrap, char *const argv[], int seccomp_fd, int info_fd, int channel_fd,
		    struct sbx_error *e)
{
	/* A core dump could carry workspace data to wherever core_pattern points. */
	struct rlimit none = { 0, 0 };
	char *const empty_env[] = { NULL };
	const int from[3] = { seccomp_fd, info_fd, channel_fd };
	int parked[3] = { -1, -1, -1 }, highest = SBX_SECCOMP_FD;

	if (setrlimit(RLIMIT_CORE, &none) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "exec-failed", "setrlimit(RLIMIT_CORE): %s", strerror(errno));
		return -1;
	}
	/* Park all above their targets first, so no dup2 clobbers another. */
	for (int i = 0; i < 3; i++)
		if (from[i] >= 0 && (parked[i] = fcntl(from[i], F_DUPFD_CLOEXEC, SBX_CHANNEL_FD + 1)) < 0)
			goto fail;
	for (int i = 0; i < 3; i++) {
		if (parked[i] < 0) {
			close(SBX_SECCOMP_FD + i); /* an unused slot keeps nothing of the caller's */
			continue;
		}
		if (dup2(parked[i], SBX_SECCOMP_FD + i) != SBX_SECCOMP_FD + i)
			goto fail;
		highest = SBX_SECCOMP_FD + i;
	}
	/* No host file reaches the sandbox by inheritance. */
	if (syscall(SYS_close_range, highest + 1, ~0U, 0) != 0)
		goto fail;
	/* bwrap's own environment shows in the sandbox as /proc/1/environ. */
	execve(bwrap, argv, empty_env);
fail:
	sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "exec-failed", "cannot execute %s: %s", bwrap, strerror(errno));
	return -1;
}
