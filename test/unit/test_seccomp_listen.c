/* test_seccomp_listen.c — sbx-run's end of the seccomp listener: a pending
 * notification is answered with its row's errno and recorded; a listener
 * whose workload is gone is dropped, never read (the kernel's RECV would
 * wait for a notification that cannot come). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../src/sbx-run/run.h"
#include "fd_pass.h"
#include "seccomp_build.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* A child under the baseline notifying filter that sends its listener on
 * and then makes a refused call (ptrace) or none; *child is its pid. */
static int listener_of_child(bool call_ptrace, pid_t *child)
{
	int pair[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sbx_error e;
		close(pair[0]);
		scmp_filter_ctx ctx = sbx_seccomp_build_part(SBX_SECCOMP_BASELINE, SBX_FILTER_NOTIFY, SCMP_ARCH_NATIVE, &e);
		if (!ctx || seccomp_load(ctx) != 0 || sbx_fd_send(pair[1], seccomp_notify_fd(ctx)) != 0)
			_exit(255);
		close(seccomp_notify_fd(ctx));
		close(pair[1]);
		long r = call_ptrace ? syscall(SYS_ptrace, 0, 0, 0, 0) : 0;
		_exit(r < 0 ? errno : 0);
	}
	close(pair[1]);
	struct pollfd p = { .fd = pair[0], .events = POLLIN };
	assert_int_equal(poll(&p, 1, 10000), 1);
	int fd = sbx_fd_recv(pair[0]);
	close(pair[0]);
	assert_true(fd >= 0);
	*child = pid;
	return fd;
}

static struct run *new_run(int listener)
{
	struct run *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	snprintf(r->req.execution_id, sizeof(r->req.execution_id), "%s", "listen-test");
	r->seccomp.sock = r->seccomp.sandbox_end = -1;
	r->seccomp.listener = listener;
	r->seccomp.received = true;
	return r;
}

static int exit_code(pid_t pid)
{
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void a_pending_call_is_answered_with_its_errno_and_recorded(void **state)
{
	(void)state;
	pid_t pid;
	struct run *r = new_run(listener_of_child(true, &pid));
	struct pollfd p = { .fd = r->seccomp.listener, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 10000), 1);
	/* The denial event goes to stdout: not into the test's report. */
	fflush(stdout);
	int saved = dup(1), null = open("/dev/null", O_WRONLY);
	assert_true(saved >= 0 && null >= 0 && dup2(null, 1) == 1);
	run_seccomp_answer(r);
	fflush(stdout);
	assert_int_equal(dup2(saved, 1), 1);
	close(saved);
	close(null);
	assert_int_equal(exit_code(pid), EPERM);
	assert_int_equal(r->seccomp.answered, 1);
	assert_int_equal(r->denials.n, 1);
	assert_string_equal(r->denials.d[0].what, "ptrace");
	run_seccomp_close(&r->seccomp);
	run_denials_free(&r->denials);
	free(r);
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "run_seccomp_answer blocked on a listener with no workload\n";
	ssize_t n = write(2, msg, sizeof(msg) - 1);
	(void)n;
	_exit(99);
}

/* Once every process under the filter is gone the listener reads as hung
 * up: that is the end of it (no RECV, which waits for a notification), and
 * it leaves the supervisor's poll set, which it would otherwise keep waking. */
static void a_listener_without_workload_is_dropped_unread(void **state)
{
	(void)state;
	pid_t pid;
	struct run *r = new_run(listener_of_child(false, &pid));
	assert_int_equal(exit_code(pid), 0);
	struct pollfd p = { .fd = r->seccomp.listener, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 10000), 1);
	assert_true(p.revents & POLLHUP);
	signal(SIGALRM, on_alarm);
	alarm(10);
	run_seccomp_answer(r);
	alarm(0);
	assert_int_equal(r->seccomp.listener, -1);
	assert_int_equal(r->seccomp.answered, 0);
	assert_int_equal(r->denials.n, 0);
	run_seccomp_close(&r->seccomp);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_pending_call_is_answered_with_its_errno_and_recorded),
		cmocka_unit_test(a_listener_without_workload_is_dropped_unread),
	};
	return cmocka_run_group_tests_name("seccomp_listen", tests, NULL, NULL);
}
