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

int sbx_launch_exec(const char *bwrap, char *const argv[], int seccomp_fd, int info_fd, struct sbx_error *e)
{
	/* A core dump could carry workspace data to wherever core_pattern points. */
	struct rlimit none = { 0, 0 };
	char *const empty_env[] = { NULL };

	if (setrlimit(RLIMIT_CORE, &none) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "exec-failed", "setrlimit(RLIMIT_CORE): %s", strerror(errno));
		return -1;
	}
	/* Park both above their targets first, so neither dup2 clobbers the other. */
	int parked_seccomp = fcntl(seccomp_fd, F_DUPFD_CLOEXEC, SBX_INFO_FD + 1);
	int parked_info = info_fd >= 0 ? fcntl(info_fd, F_DUPFD_CLOEXEC, SBX_INFO_FD + 1) : -1;
	if (parked_seccomp < 0 || (info_fd >= 0 && parked_info < 0) ||
	    dup2(parked_seccomp, SBX_SECCOMP_FD) != SBX_SECCOMP_FD ||
	    (info_fd >= 0 && dup2(parked_info, SBX_INFO_FD) != SBX_INFO_FD))
		goto fail;
	/* No host file reaches the sandbox by inheritance. */
	if (syscall(SYS_close_range, info_fd >= 0 ? SBX_INFO_FD + 1 : SBX_SECCOMP_FD + 1, ~0U, 0) != 0)
		goto fail;
	/* bwrap's own environment shows in the sandbox as /proc/1/environ. */
	execve(bwrap, argv, empty_env);
fail:
	sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "exec-failed", "cannot execute %s: %s", bwrap, strerror(errno));
	return -1;
}
