/* sbx-egress-bridge — the first process of an allowlisted workload: listens
 * on 127.0.0.1 and [::1] before it forks, runs the workload, hands each
 * connection to the gateway's socket, and exits with the workload's status. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define EXIT_NO_NETWORK 4

static struct sockaddr_un gateway = { .sun_family = AF_UNIX };
static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

/* The bridge writes only to stderr: stdout belongs to the workload. */
static _Noreturn void die(int code, const char *what, const char *detail)
{
	fprintf(stderr, "sbx-egress-bridge: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	exit(code);
}

static int connect_gateway(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&gateway, sizeof(gateway)) == 0)
		return fd;
	int saved = errno;
	if (fd >= 0)
		close(fd);
	errno = saved;
	return -1;
}

/* 127.0.0.1 must work; [::1] may be absent when the kernel has no IPv6. */
static int listen_on(int family, int port, bool required)
{
	struct sockaddr_storage ss;
	socklen_t len;
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		s6->sin6_addr = in6addr_loopback;
		len = sizeof(*s6);
	}
	int one = 1, fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&ss, len) == 0 && listen(fd, 1024) == 0)
			return fd;
	}
	int saved = errno;
	if (fd >= 0)
		close(fd);
	if (required || (saved != EADDRNOTAVAIL && saved != EAFNOSUPPORT))
		die(EXIT_NO_NETWORK, family == AF_INET ? "cannot listen on 127.0.0.1; the workload is not started"
						       : "cannot listen on [::1]; the workload is not started",
		    strerror(saved));
	return -1;
}

/* Hands the accepted connection itself to the gateway (SCM_RIGHTS behind
 * one NUL byte): the gateway relays it directly, so the bytes cross one
 * proxy instead of two. Local and quick, so done in the accept loop. */
static void pass_connection(int client)
{
	int up = connect_gateway();
	if (up < 0) {
		fprintf(stderr, "sbx-egress-bridge: gateway unreachable: %s\n", strerror(errno));
		close(client);
		return;
	}
	char marker = '\0';
	struct iovec iov = { .iov_base = &marker, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
			      .msg_controllen = sizeof(control.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &client, sizeof(int));
	if (sendmsg(up, &msg, MSG_NOSIGNAL) != 1)
		fprintf(stderr, "sbx-egress-bridge: cannot hand a connection to the gateway: %s\n", strerror(errno));
	close(up);
	close(client);
}

static void accept_one(int listener)
{
	int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		pass_connection(fd);
}

static int exit_status(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static _Noreturn void run_workload(char **argv, const sigset_t *old_mask, const struct rlimit *nofile)
{
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		signal(forwarded[i], SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, old_mask, NULL);
	setrlimit(RLIMIT_NOFILE, nofile);
	/* The workload, with the environment the launch built for the sandbox. */
	execvp(argv[0], argv);
	int code = errno == ENOENT ? 127 : 126;
	fprintf(stderr, "sbx-egress-bridge: %s: %s\n", argv[0], strerror(errno));
	_exit(code);
}

int main(int argc, char **argv)
{
	const char *socket_path = NULL;
	long port = 0;
	int i = 1;

	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
			socket_path = argv[++i];
		} else if (!strcmp(argv[i], "--listen") && i + 1 < argc) {
			char *end;
			port = strtol(argv[++i], &end, 10);
			if (*end || port < 1 || port > 65535)
				die(EXIT_USAGE, "--listen: a port from 1 to 65535", argv[i]);
		} else {
			die(EXIT_USAGE, "usage: sbx-egress-bridge --socket PATH --listen PORT -- ARGV...", NULL);
		}
	}
	if (!socket_path || !port || i + 1 >= argc)
		die(EXIT_USAGE, "usage: sbx-egress-bridge --socket PATH --listen PORT -- ARGV...", NULL);
	if (strlen(socket_path) >= sizeof(gateway.sun_path))
		die(EXIT_USAGE, "--socket: path too long", NULL);
	memcpy(gateway.sun_path, socket_path, strlen(socket_path) + 1);

	/* Fail closed: no gateway, or no listener, and the workload never runs. */
	int probe = connect_gateway();
	if (probe < 0)
		die(EXIT_NO_NETWORK, "the egress gateway socket is unusable; the workload is not started", strerror(errno));
	close(probe);
	int listeners[2] = { listen_on(AF_INET, (int)port, true), listen_on(AF_INET6, (int)port, false) };

	struct rlimit nofile, raised;
	getrlimit(RLIMIT_NOFILE, &nofile);
	raised = nofile;
	raised.rlim_cur = raised.rlim_max;
	setrlimit(RLIMIT_NOFILE, &raised);
	sigset_t mask, old_mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	for (size_t k = 0; k < sizeof(forwarded) / sizeof(forwarded[0]); k++)
		sigaddset(&mask, forwarded[k]);
	sigprocmask(SIG_BLOCK, &mask, &old_mask);
	signal(SIGPIPE, SIG_IGN);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0)
		die(EXIT_NO_NETWORK, "signalfd", strerror(errno));
	fflush(NULL);
	pid_t child = fork();
	if (child < 0)
		die(EXIT_NO_NETWORK, "fork", strerror(errno));
	if (child == 0)
		run_workload(argv + i + 1, &old_mask, &nofile);

	for (;;) {
		struct pollfd p[3] = { { .fd = sfd, .events = POLLIN }, { .fd = listeners[0], .events = POLLIN },
				       { .fd = listeners[1], .events = POLLIN } };
		if (poll(p, listeners[1] >= 0 ? 3 : 2, -1) < 0 && errno != EINTR)
			die(EXIT_NO_NETWORK, "poll", strerror(errno));
		for (int k = 1; k < 3; k++)
			if (p[k].fd >= 0 && (p[k].revents & POLLIN))
				accept_one(p[k].fd);
		if (!(p[0].revents & POLLIN))
			continue;
		struct signalfd_siginfo si;
		if (read(sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo != SIGCHLD) {
			kill(child, (int)si.ssi_signo);
			continue;
		}
		int status;
		if (waitpid(child, &status, WNOHANG) == child)
			return exit_status(status);
	}
}
