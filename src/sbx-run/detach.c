/* detach.c — a helper program sbx-run leaves running (an egress gateway, a
 * store collection): nobody's child, its own session, fd 3 handed over. */
#include "run.h"
#include "../lib/exitcodes.h"
#include "../lib/sys_admin_cap.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_IDLE (3 << 13)

int run_detach(const char *const *argv, char *const *envp, const char *err_path, int fd3, bool idle)
{
	pid_t pid = fork();
	if (pid == 0) {
		/* The middle process exits at once: the helper is nobody's child. */
		setsid();
		if (fork() != 0)
			_exit(0);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		int errfd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
		int held = fcntl(fd3, F_DUPFD_CLOEXEC, 10);
		if (null < 0 || errfd < 0 || held < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(errfd, 2) < 0 ||
		    dup2(held, 3) != 3)
			_exit(SBX_EXIT_INTERNAL);
		syscall(SYS_close_range, 4u, ~0u, 0u);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (idle) {
			setpriority(PRIO_PROCESS, 0, 19);
			syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO_IDLE);
		}
		/* dac_override (where it stands in for dac_read_search) and
		 * sys_admin are sbx-run's and sbx-launch's only: no helper's. */
		sbx_helper_bounds_narrow();
		execve(argv[0], (char *const *)argv, envp);
		_exit(SBX_EXIT_INTERNAL);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return pid > 0 ? 0 : -1;
}
