/* sbx-seccomp-notify — the first program of a sandbox that reports its
 * denials: enters a Landlock domain, loads the reported half of the
 * seccomp policy with a listener, hands the listener to the supervisor
 * over a socket, keeps no copy, and runs the workload. Static: it runs
 * where no library may be bound. */
#include "../lib/fd_pass.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXIT_SETUP 125        /* as env(1): the command never started */
#define MAX_PROGRAM_BYTES (4096 * 8)

/* Writes only to stderr: stdout belongs to the workload. */
static _Noreturn void die(const char *what, const char *detail)
{
	fprintf(stderr, "sbx-seccomp-notify: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	exit(EXIT_SETUP);
}

static int fd_arg(const char *name, const char *text)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (errno || *end || end == text || v < 3 || v > 1023)
		die(name, "must name a descriptor from 3 to 1023");
	return (int)v;
}

/* The whole program from fd (a sealed memfd from sbx-launch). */
static void read_program(int fd, struct sock_filter *insns, unsigned short *len)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > MAX_PROGRAM_BYTES ||
	    st.st_size % (off_t)sizeof(struct sock_filter) != 0)
		die("--filter-fd", "not a seccomp program");
	size_t have = 0, want = (size_t)st.st_size;
	while (have < want) {
		ssize_t n = pread(fd, (char *)insns + have, want - have, (off_t)have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("--filter-fd", n < 0 ? strerror(errno) : "short read");
		have += (size_t)n;
	}
	*len = (unsigned short)(want / sizeof(struct sock_filter));
}

/* The sandbox's pid 1 is bwrap's, whose filter lacks the reported rows:
 * code written into it (/proc/1/mem) would make those calls unrefused.
 * A Landlock domain denies ptrace-mode access (/proc/PID/mem, syscall,
 * environ...) to every process outside it. The ruleset handles only
 * block-device mknod, which needs CAP_MKNOD the sandbox never has. */
static void enter_landlock_domain(void)
{
	struct landlock_ruleset_attr attr = { .handled_access_fs = LANDLOCK_ACCESS_FS_MAKE_BLOCK };
	int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (ruleset < 0)
		die("landlock", strerror(errno));
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0)
		die("landlock", strerror(errno));
	close(ruleset);
}

int main(int argc, char **argv)
{
	static struct sock_filter insns[MAX_PROGRAM_BYTES / sizeof(struct sock_filter)];
	if (argc < 6 || strcmp(argv[1], "--filter-fd") != 0 || strcmp(argv[3], "--socket-fd") != 0 ||
	    strcmp(argv[5], "--") != 0 || argc < 7) {
		fprintf(stderr, "usage: sbx-seccomp-notify --filter-fd FD --socket-fd FD -- COMMAND [ARG...]\n"
				"See sbx-seccomp-notify(1).\n");
		return EXIT_SETUP;
	}
	int filter_fd = fd_arg("--filter-fd", argv[2]), sock = fd_arg("--socket-fd", argv[4]);
	struct sock_fprog prog = { .filter = insns };
	read_program(filter_fd, insns, &prog.len);
	close(filter_fd);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		die("no_new_privs", strerror(errno));
	enter_landlock_domain();
	/* The bwrap filter leaves these calls to this one: without it loaded,
	 * the command must not run. */
	int listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (listener < 0)
		die("loading the filter", strerror(errno));
	if (sbx_fd_send(sock, listener) != 0)
		die("sending the listener", strerror(errno));
	/* The workload never holds the listener: it could answer its own
	 * notifications (and let a refused call through). */
	close(listener);
	close(sock);
	execvp(argv[6], argv + 6);
	int saved = errno;
	fprintf(stderr, "sbx-seccomp-notify: %s: %s\n", argv[6], strerror(saved));
	return saved == ENOENT ? 127 : 126;
}
