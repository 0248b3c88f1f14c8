/* spawn_hold.c — a child forked ahead of its program: it joins its
 * cgroups while the parent prepares, then execs what it is sent over a
 * socket pair (argv, environment, cwd as strings; fds as SCM_RIGHTS). */
#include "spawn_hold.h"
#include "../lib/child_env.h"
#include "../lib/exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define ORDER_MAX 65536   /* argv + environment + cwd, NUL-separated */
#define ORDER_FDS 67      /* stdin, stdout, stderr and up to 64 more */
#define ORDER_STRINGS 1024


/* The order, as the child receives it: counts, then the strings. */
struct order_head {
	unsigned n_argv, n_env, n_fds, has_cwd;
};

/* In the child: waits for the order and execs it; never returns. */
static _Noreturn void held_child(int sock, int join_errno)
{
	static char buf[ORDER_MAX];
	static char *argv[ORDER_STRINGS + 1], *envp[ORDER_STRINGS + 1];
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(int) * ORDER_FDS)];
	} ctl;
	struct order_head head;
	struct iovec iov[2] = { { &head, sizeof(head) }, { buf, sizeof(buf) - 1 } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = ctl.space, .msg_controllen = sizeof(ctl.space) };
	ssize_t n;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	int err = join_errno;
	if (n <= 0)
		_exit(127); /* discarded: the parent closed its end */
	int fds[ORDER_FDS];
	unsigned got = 0;
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
		got = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(c), got * sizeof(int));
	}
	size_t len = (size_t)n - sizeof(head);
	if (!err && ((size_t)n < sizeof(head) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || got != head.n_fds ||
		     got < 3 || head.n_argv < 1 || head.n_argv > ORDER_STRINGS || head.n_env > ORDER_STRINGS))
		err = EPROTO;
	buf[(size_t)n > sizeof(head) ? len : 0] = '\0';
	/* The strings, in order: argv, the environment, then cwd if any. */
	char *p = buf, *end = buf + ((size_t)n > sizeof(head) ? len : 0), *cwd = NULL;
	unsigned want = head.n_argv + head.n_env + head.has_cwd;
	for (unsigned i = 0; !err && i < want; i++) {
		if (p >= end) {
			err = EPROTO;
			break;
		}
		if (i < head.n_argv)
			argv[i] = p;
		else if (i < head.n_argv + head.n_env)
			envp[i - head.n_argv] = p;
		else
			cwd = p;
		p += strlen(p) + 1;
	}
	if (err) {
		ssize_t ignored = write(sock, &err, sizeof(err));
		(void)ignored;
		_exit(127);
	}
	argv[head.n_argv] = NULL;
	envp[head.n_env] = NULL;
	struct sbx_spawn s = { .argv = (const char *const *)argv, .envp = envp, .stdin_fd = fds[0], .stdout_fd = fds[1],
			       .stderr_fd = fds[2], .extra_fds = fds + 3, .n_extra = got - 3, .cwd = cwd };
	sbx_spawn_child_exec(&s, fds[0], sock);
}

int sbx_spawn_hold(const struct sbx_spawn *s, struct sbx_spawn_holder *h, struct sbx_error *e)
{
	int sv[2];
	h->pid = -1;
	h->sock = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "spawn-failed", "socketpair: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		held_child(sv[1], sbx_spawn_child_setup(s));
	}
	int fork_errno = errno;
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "spawn-failed", "fork: %s", strerror(fork_errno));
		return -1;
	}
	if (s->new_process_group && !s->new_session)
		setpgid(pid, pid);
	h->pid = pid;
	h->sock = sv[0];
	return 0;
}

/* Appends s and its NUL to buf at *len; false when it does not fit. */
static bool put_string(char *buf, size_t *len, const char *s)
{
	size_t n = strlen(s) + 1;
	if (*len + n > ORDER_MAX - 1)
		return false;
	memcpy(buf + *len, s, n);
	*len += n;
	return true;
}

pid_t sbx_spawn_release(struct sbx_spawn_holder *h, const struct sbx_spawn *s, int *exec_errno, struct sbx_error *e)
{
	char *buf = malloc(ORDER_MAX);
	char **passed = s->envp ? NULL : sbx_child_environ();
	char *const *env = s->envp ? s->envp : passed;
	struct order_head head = { .n_fds = 3 + (unsigned)s->n_extra, .has_cwd = s->cwd != NULL };
	size_t len = 0;
	bool fits = buf && env && s->n_extra <= ORDER_FDS - 3;
	for (; fits && s->argv[head.n_argv]; head.n_argv++)
		fits = head.n_argv < ORDER_STRINGS && put_string(buf, &len, s->argv[head.n_argv]);
	for (; fits && env[head.n_env]; head.n_env++)
		fits = head.n_env < ORDER_STRINGS && put_string(buf, &len, env[head.n_env]);
	if (fits && s->cwd)
		fits = put_string(buf, &len, s->cwd);
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	int fds[ORDER_FDS];
	int src[3] = { s->stdin_fd, s->stdout_fd, s->stderr_fd };
	for (unsigned i = 0; fits && i < head.n_fds; i++) {
		int fd = i < 3 ? src[i] : s->extra_fds[i - 3];
		fds[i] = fd >= 0 ? fd : devnull;
	}
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(int) * ORDER_FDS)];
	} ctl;
	memset(&ctl, 0, sizeof(ctl));
	struct iovec iov[2] = { { &head, sizeof(head) }, { buf, len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = ctl.space,
			      .msg_controllen = CMSG_SPACE(sizeof(int) * head.n_fds) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * head.n_fds);
	if (fits && devnull >= 0)
		memcpy(CMSG_DATA(c), fds, sizeof(int) * head.n_fds);
	ssize_t sent = fits && devnull >= 0 ? sendmsg(h->sock, &msg, MSG_NOSIGNAL) : -1;
	int send_errno = fits ? errno : E2BIG;
	free(buf);
	free(passed);
	if (devnull >= 0)
		close(devnull);
	if (sent < 0) {
		sbx_spawn_discard(h);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "spawn-failed", "%s: handing over: %s", s->argv[0], strerror(send_errno));
		return -1;
	}
	/* Its end closes on exec; an errno before that is a failed start. */
	int child_errno = 0;
	ssize_t n;
	do
		n = read(h->sock, &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(h->sock);
	h->sock = -1;
	pid_t pid = h->pid;
	if (exec_errno)
		*exec_errno = 0;
	if (n == (ssize_t)sizeof(child_errno)) {
		waitpid(pid, NULL, 0);
		h->pid = -1;
		if (exec_errno)
			*exec_errno = child_errno;
		sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "spawn-failed", "cannot execute %s: %s", s->argv[0],
			      strerror(child_errno));
		return -1;
	}
	h->pid = -1;
	return pid;
}

void sbx_spawn_discard(struct sbx_spawn_holder *h)
{
	if (h->sock >= 0)
		close(h->sock);
	if (h->pid > 0) {
		kill(h->pid, SIGKILL);
		while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	h->sock = -1;
	h->pid = -1;
}
