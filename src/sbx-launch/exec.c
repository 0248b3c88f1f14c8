/* exec.c — the last steps before bwrap runs. */
#include "exec.h"
#include "../lib/exitcodes.h"
#include "plan.h"

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

int sbx_launch_exec(const char *bwrap, const struct sbx_launch_plan *plan, const struct sbx_launch_fds *fds,
		    struct sbx_error *e)
{
	const int *bind_src = plan->bind_src;
	size_t n_bind = plan->n_bind;
	/* A core dump could carry workspace data to wherever core_pattern points. */
	struct rlimit none = { 0, 0 };
	char *const empty_env[] = { NULL };
	enum { SLOTS = SBX_BIND_FD_FIRST - SBX_SECCOMP_FD + SBX_BIND_FD_MAX };
	int from[SLOTS], parked[SLOTS], highest = SBX_SECCOMP_FD;
	/* Parked just above the highest slot in use: a low RLIMIT_NOFILE still fits. */
	const int park_above = SBX_BIND_FD_FIRST + (int)n_bind;

	if (setrlimit(RLIMIT_CORE, &none) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "exec-failed", "setrlimit(RLIMIT_CORE): %s", strerror(errno));
		return -1;
	}
	/* The default bounds: no larger than asked, never above what we hold. */
	const struct {
		int resource;
		long long value;
		const char *name;
	} caps[] = { { RLIMIT_FSIZE, plan->file_size_limit, "RLIMIT_FSIZE" },
		     { RLIMIT_NPROC, plan->max_processes > 0 ? plan->max_processes : -1, "RLIMIT_NPROC" },
		     { RLIMIT_NOFILE, plan->max_open_files > 0 ? plan->max_open_files : -1, "RLIMIT_NOFILE" },
		     { RLIMIT_AS, plan->max_address_space > 0 ? plan->max_address_space : -1, "RLIMIT_AS" } };
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		struct rlimit now;
		if (caps[i].value < 0 || getrlimit(caps[i].resource, &now) != 0)
			continue;
		rlim_t want = (rlim_t)caps[i].value;
		if (now.rlim_max != RLIM_INFINITY && now.rlim_max < want)
			want = now.rlim_max;
		struct rlimit set = { want, want };
		if (setrlimit(caps[i].resource, &set) != 0) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "exec-failed", "setrlimit(%s): %s", caps[i].name, strerror(errno));
			return -1;
		}
	}
	if (n_bind > SBX_BIND_FD_MAX)
		return sbx_error_set(e, SBX_EXIT_INTERNAL, "exec-failed", "too many bound directories"), -1;
	/* Slot i is fd SBX_SECCOMP_FD + i: the filter, info, channel, the
	 * notifying filter and its socket, then binds. */
	from[0] = fds->seccomp;
	from[1] = fds->info;
	from[2] = fds->channel;
	from[3] = fds->notify_filter;
	from[4] = fds->notify_socket;
	size_t n = SBX_BIND_FD_FIRST - SBX_SECCOMP_FD + n_bind;
	for (size_t i = 0; i < n_bind; i++)
		from[SBX_BIND_FD_FIRST - SBX_SECCOMP_FD + i] = bind_src[i];
	/* Park all above their targets first, so no dup2 clobbers another. */
	for (size_t i = 0; i < n; i++)
		if ((parked[i] = from[i] >= 0 ? fcntl(from[i], F_DUPFD_CLOEXEC, park_above) : -1) < 0 && from[i] >= 0)
			goto fail;
	for (size_t i = 0; i < n; i++) {
		int target = SBX_SECCOMP_FD + (int)i;
		if (parked[i] < 0) {
			close(target); /* an unused slot keeps nothing of the caller's */
			continue;
		}
		if (dup2(parked[i], target) != target)
			goto fail;
		highest = target;
	}
	/* No host file reaches the sandbox by inheritance. */
	if (syscall(SYS_close_range, highest + 1, ~0U, 0) != 0)
		goto fail;
	/* bwrap's own environment shows in the sandbox as /proc/1/environ. */
	execve(bwrap, plan->argv.items, empty_env);
fail:
	sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "exec-failed", "cannot execute %s: %s", bwrap, strerror(errno));
	return -1;
}
