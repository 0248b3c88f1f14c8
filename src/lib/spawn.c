/* spawn.c — vfork-style clone/exec with explicit fds (no copy of the
 * parent's page tables, no copy-on-write faults in a busy daemon); capture
 * with caps and a deadline. */
#include "spawn.h"
#include "child_env.h"
#include "clock.h"
#include "exitcodes.h"
#include "sys_admin_cap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(__SANITIZE_ADDRESS__)
#define __SANITIZE_ADDRESS__ 1
#endif
#endif
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>


static void close_from(int lowest)
{
	if (syscall(SYS_close_range, (unsigned)lowest, ~0U, 0) == 0)
		return;
	long max = sysconf(_SC_OPEN_MAX);
	for (long fd = lowest; fd < (max > 0 ? max : 65536); fd++)
		close((int)fd);
}

int sbx_spawn_child_setup(const struct sbx_spawn *s)
{
	if (s->new_session)
		setsid();
	else if (s->new_process_group)
		setpgid(0, 0);
	for (size_t i = 0; i < s->n_cgroup_procs; i++)
		if (s->cgroup_procs_fds[i] > 0 && write(s->cgroup_procs_fds[i], "0", 1) != 1)
			return errno ? errno : EIO;
	/* Raw system calls: they change this thread only (glibc's wrappers
	 * would signal every thread of a process we share memory with), and
	 * the child is single-threaded. Root must not come back. */
	if (s->switch_ids) {
		if (s->uid == 0 || s->gid == 0)
			return EPERM;
		if (syscall(SYS_setgroups, 0, NULL) != 0 || syscall(SYS_setresgid, s->gid, s->gid, s->gid) != 0 ||
		    syscall(SYS_setresuid, s->uid, s->uid, s->uid) != 0)
			return errno ? errno : EPERM;
		if (syscall(SYS_setresuid, 0, 0, 0) == 0)
			return EPERM;
	}
	if (s->helper)
		sbx_helper_bounds_narrow();
	/* After the switch: a change of credentials clears the signal. */
	if (s->die_with_parent)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	return 0;
}

/* Runs in the child between fork and exec: async-signal-safe calls only. */
_Noreturn void sbx_spawn_child_exec(const struct sbx_spawn *s, int devnull, int report_fd)
{
	int src[3] = { s->stdin_fd, s->stdout_fd, s->stderr_fd };
	int park = 3 + (int)s->n_extra + 4; /* above every target fd */
	int moved[3 + 64];
	sigset_t none;
	size_t total = 3 + s->n_extra;

	int setup = sbx_spawn_child_setup(s);
	if (setup != 0) {
		errno = setup;
		goto fail;
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (report_fd < park) {
		int r = fcntl(report_fd, F_DUPFD_CLOEXEC, park);
		if (r >= 0)
			report_fd = r;
	}
	/* Park every source above the targets first so no dup2 clobbers one. */
	for (size_t i = 0; i < total; i++) {
		int from = i < 3 ? src[i] : s->extra_fds[i - 3];
		if (from < 0)
			from = devnull;
		moved[i] = fcntl(from, F_DUPFD_CLOEXEC, park);
		if (moved[i] < 0)
			goto fail;
	}
	for (size_t i = 0; i < total; i++)
		if (dup2(moved[i], (int)i) < 0)
			goto fail;
	/* The report pipe is CLOEXEC; keep it open past close_from. */
	if (report_fd != (int)total) {
		if (dup3(report_fd, (int)total, O_CLOEXEC) < 0)
			goto fail;
		report_fd = (int)total;
	}
	close_from((int)total + 1);
	if (s->cwd && chdir(s->cwd) != 0)
		goto fail;
	execve(s->argv[0], (char *const *)s->argv, s->envp);
fail:;
	int err = errno;
	ssize_t ignored = write(report_fd, &err, sizeof(err));
	(void)ignored;
	_exit(127);
}

/* The child shares our memory until it execs (CLONE_VM | CLONE_VFORK):
 * no handler of ours may run in it, so each caught signal goes back to its
 * default before the child unblocks signals. */
#define CHILD_STACK (64 * 1024)

struct child_start {
	const struct sbx_spawn *s;
	int devnull, report_fd;
};

static int child_main(void *arg)
{
	const struct child_start *c = arg;
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;
		if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN) {
			sa.sa_handler = SIG_DFL;
			sa.sa_flags = 0;
			sigaction(sig, &sa, NULL);
		}
	}
	sbx_spawn_child_exec(c->s, c->devnull, c->report_fd);
}

/* Starts the child on a stack of its own, every signal blocked until it
 * has reset them; we resume once it has exec'd (or failed to). */
static pid_t vfork_child(const struct sbx_spawn *s, int devnull, int report_fd)
{
#ifdef __SANITIZE_ADDRESS__
	/* ASan cannot follow instrumented code onto a stack of our own (its
	 * no-return and redzone bookkeeping expects the thread's): fork. */
	struct child_start forked = { .s = s, .devnull = devnull, .report_fd = report_fd };
	pid_t child = fork();
	if (child == 0)
		child_main(&forked);
	return child;
#endif
	char *stack = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -1;
	struct child_start c = { .s = s, .devnull = devnull, .report_fd = report_fd };
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(child_main, stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
	int clone_errno = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	munmap(stack, CHILD_STACK);
	errno = clone_errno;
	return pid;
}

pid_t sbx_spawn_start(const struct sbx_spawn *s, int *exec_errno, struct sbx_error *e)
{
	int report[2];
	int devnull;

	if (exec_errno)
		*exec_errno = 0;
	if (s->n_extra > 64) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "spawn-failed", "too many fds for %s", s->argv[0]);
		return -1;
	}
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0 || pipe2(report, O_CLOEXEC) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "spawn-failed", "%s: %s", s->argv[0], strerror(errno));
		if (devnull >= 0)
			close(devnull);
		return -1;
	}
	/* NULL asks for the pass-list environment (child_env.h), never ours whole. */
	char **passed = s->envp ? NULL : sbx_child_environ();
	struct sbx_spawn with_env = *s;
	if (passed)
		with_env.envp = passed;
	pid_t pid = with_env.envp ? vfork_child(&with_env, devnull, report[1]) : -1;
	int fork_errno = with_env.envp ? errno : ENOMEM;
	free(passed);
	if (pid > 0 && s->new_process_group && !s->new_session)
		setpgid(pid, pid); /* both sides set it: no window where a kill misses */
	close(report[1]);
	close(devnull);
	if (pid < 0) {
		close(report[0]);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "spawn-failed", "%s: clone: %s", s->argv[0], strerror(fork_errno));
		return -1;
	}
	int child_errno = 0;
	ssize_t n;
	do
		n = read(report[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(report[0]);
	if (n == (ssize_t)sizeof(child_errno)) {
		waitpid(pid, NULL, 0);
		if (exec_errno)
			*exec_errno = child_errno;
		sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "spawn-failed", "cannot execute %s: %s", s->argv[0],
			      strerror(child_errno));
		return -1;
	}
	return pid;
}

struct sink {
	int fd;
	char **buf;
	size_t *len;
	bool *truncated;
	size_t alloc;
};

enum drained { DRAIN_CLOSED, DRAIN_WOULD_BLOCK, DRAIN_GOT_DATA };

/* Reads one chunk of what is available into the sink, within the cap. */
static enum drained drain(struct sink *k, size_t cap)
{
	char chunk[16384];
	ssize_t n = read(k->fd, chunk, sizeof(chunk));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return DRAIN_WOULD_BLOCK;
	if (n <= 0)
		return DRAIN_CLOSED;
	size_t keep = (size_t)n;
	if (*k->len + keep > cap) {
		keep = cap - *k->len;
		*k->truncated = true;
	}
	if (keep > 0) {
		if (*k->len + keep + 1 > k->alloc) {
			size_t next = k->alloc ? k->alloc * 2 : 4096;
			while (next < *k->len + keep + 1)
				next *= 2;
			char *grown = realloc(*k->buf, next);
			if (!grown) {
				*k->truncated = true;
				return DRAIN_GOT_DATA;
			}
			*k->buf = grown;
			k->alloc = next;
		}
		memcpy(*k->buf + *k->len, chunk, keep);
		*k->len += keep;
		(*k->buf)[*k->len] = '\0';
	}
	return DRAIN_GOT_DATA;
}

int sbx_spawn_capture(const struct sbx_spawn *s, int timeout_ms, size_t cap,
		      struct sbx_capture *c, struct sbx_error *e)
{
	int out[2], err[2];
	struct sbx_spawn run = *s;

	memset(c, 0, sizeof(*c));
	c->out = calloc(1, 1);
	c->err = calloc(1, 1);
	if (!c->out || !c->err || pipe2(out, O_CLOEXEC) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "spawn-failed", "pipe: %s", strerror(errno));
		sbx_capture_free(c);
		return -1;
	}
	if (pipe2(err, O_CLOEXEC) != 0) {
		close(out[0]);
		close(out[1]);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "spawn-failed", "pipe: %s", strerror(errno));
		sbx_capture_free(c);
		return -1;
	}
	run.stdout_fd = out[1];
	run.stderr_fd = err[1];
	run.new_process_group = true;
	pid_t pid = sbx_spawn_start(&run, &c->exec_errno, e);
	close(out[1]);
	close(err[1]);
	if (pid < 0) {
		close(out[0]);
		close(err[0]);
		sbx_capture_free(c);
		return -1;
	}

	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct sink sinks[2] = {
		{ out[0], &c->out, &c->out_len, &c->out_truncated, 1 },
		{ err[0], &c->err, &c->err_len, &c->err_truncated, 1 },
	};
	bool open_[2] = { true, true }, exited = false;
	long long deadline = timeout_ms > 0 ? sbx_mono_ms() + timeout_ms : 0;

	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	while ((open_[0] || open_[1]) && !exited) {
		struct pollfd p[3];
		int np = 0, idx[3];
		for (int i = 0; i < 2; i++)
			if (open_[i]) {
				idx[np] = i;
				p[np++] = (struct pollfd){ .fd = sinks[i].fd, .events = POLLIN };
			}
		if (pidfd >= 0) {
			idx[np] = 2;
			p[np++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
		}
		int wait = -1;
		if (deadline) {
			long long left = deadline - sbx_mono_ms();
			wait = left > 0 ? (int)left : 0;
		}
		int r = poll(p, (nfds_t)np, wait);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			c->timed_out = true;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			break;
		}
		for (int j = 0; j < np; j++) {
			if (!p[j].revents)
				continue;
			if (idx[j] == 2)
				exited = true;
			else if (drain(&sinks[idx[j]], cap) == DRAIN_CLOSED)
				open_[idx[j]] = false;
		}
	}
	/* The program is gone (or killed): keep what is already buffered, but
	 * never wait on pipes a stray grandchild may still hold. */
	for (int i = 0; i < 2; i++) {
		while (open_[i] && !c->timed_out && drain(&sinks[i], cap) == DRAIN_GOT_DATA)
			;
		close(sinks[i].fd);
	}
	if (pidfd >= 0)
		close(pidfd);
	while (waitpid(pid, &c->status, 0) < 0 && errno == EINTR)
		;
	return 0;
}

void sbx_capture_free(struct sbx_capture *c)
{
	free(c->out);
	free(c->err);
	c->out = c->err = NULL;
}

void sbx_last_line(const char *text, char *out, size_t size)
{
	const char *end = text + strlen(text);

	out[0] = '\0';
	while (end > text) {
		const char *stop = end;
		while (stop > text && (stop[-1] == '\n' || stop[-1] == '\r' || stop[-1] == ' ' || stop[-1] == '\t'))
			stop--;
		const char *start = stop;
		while (start > text && start[-1] != '\n')
			start--;
		while (start < stop && (*start == ' ' || *start == '\t'))
			start++;
		if (stop > start) {
			snprintf(out, size, "%.*s", (int)(stop - start), start);
			return;
		}
		end = start;
		if (end > text)
			end--; /* step over the newline */
	}
}

