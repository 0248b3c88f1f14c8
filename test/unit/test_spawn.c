/* test_spawn.c — safe spawn: no shell, fds closed but the chosen ones,
 * capture caps, deadlines that kill the whole group, exec failures, the
 * pass-list environment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "child_env.h"
#include "../../src/sbx-run/spawn_hold.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int capture(const char *const *argv, int timeout_ms, size_t cap, struct sbx_capture *c)
{
	struct sbx_error e;
	struct sbx_spawn s = { .argv = argv, .stdin_fd = -1 };
	return sbx_spawn_capture(&s, timeout_ms, cap, c, &e);
}

static void captures_stdout_and_stderr_apart(void **state)
{
	(void)state;
	const char *argv[] = { "/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL };
	struct sbx_capture c;
	assert_int_equal(capture(argv, 5000, 1024, &c), 0);
	assert_string_equal(c.out, "out\n");
	assert_string_equal(c.err, "err\n");
	assert_true(WIFEXITED(c.status));
	assert_int_equal(WEXITSTATUS(c.status), 3);
	assert_false(c.timed_out);
	sbx_capture_free(&c);
}

static void output_beyond_the_cap_is_dropped_and_flagged(void **state)
{
	(void)state;
	const char *argv[] = { "/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x", NULL };
	struct sbx_capture c;
	assert_int_equal(capture(argv, 5000, 1000, &c), 0);
	assert_int_equal(c.out_len, 1000);
	assert_true(c.out_truncated);
	assert_int_equal(WEXITSTATUS(c.status), 0); /* drained, so no SIGPIPE */
	sbx_capture_free(&c);
}

static void deadline_kills_the_process_group(void **state)
{
	(void)state;
	/* The grandchild writes its pid, then both wait forever. */
	const char *argv[] = { "/bin/sh", "-c", "tail -f /dev/null & echo $!; wait", NULL };
	struct sbx_capture c;
	assert_int_equal(capture(argv, 200, 1024, &c), 0);
	assert_true(c.timed_out);
	pid_t grandchild = (pid_t)atoi(c.out);
	assert_true(grandchild > 0);
	/* Killed with its group: its pidfd turns readable when it has exited.
	 * Left alive, the poll runs out and the test fails. */
	int pidfd = (int)syscall(SYS_pidfd_open, grandchild, 0);
	if (pidfd >= 0) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		assert_int_equal(poll(&p, 1, 10000), 1);
		close(pidfd);
	} else if (errno == ENOSYS) {
		/* No pidfd_open (valgrind does not emulate it): nothing to wait on. */
		sbx_capture_free(&c);
		skip();
	} else {
		assert_int_equal(errno, ESRCH); /* already reaped */
	}
	sbx_capture_free(&c);
}

static void only_std_and_extra_fds_are_inherited(void **state)
{
	(void)state;
	int leak = open("/dev/null", O_RDONLY); /* deliberately not CLOEXEC */
	int pass[2];
	assert_int_equal(pipe(pass), 0);
	assert_int_equal(write(pass[1], "fd3", 3), 3);
	close(pass[1]);

	const char *argv[] = { "/bin/sh", "-c", "ls /proc/self/fd | sort -n | tr '\\n' ' '; cat <&3", NULL };
	struct sbx_error e;
	struct sbx_capture c;
	struct sbx_spawn s = { .argv = argv, .stdin_fd = -1, .extra_fds = &pass[0], .n_extra = 1 };
	assert_int_equal(sbx_spawn_capture(&s, 5000, 1024, &c, &e), 0);
	/* 0 1 2 3, plus the fd ls itself opens on /proc/self/fd. */
	assert_string_equal(c.out, "0 1 2 3 4 fd3");
	sbx_capture_free(&c);
	close(leak);
	close(pass[0]);
}

static void exec_failure_is_reported_with_errno(void **state)
{
	(void)state;
	const char *argv[] = { "/nonexistent/program", NULL };
	struct sbx_capture c;
	struct sbx_error e;
	struct sbx_spawn s = { .argv = argv, .stdin_fd = -1 };
	assert_int_equal(sbx_spawn_capture(&s, 1000, 64, &c, &e), -1);
	assert_int_equal(c.exec_errno, ENOENT);
	assert_string_equal(e.code, "spawn-failed");
	assert_non_null(strstr(e.message, "/nonexistent/program"));
	assert_null(c.out); /* nothing left to free: ASan's leak check holds us to it */
}

static void no_shell_interprets_arguments(void **state)
{
	(void)state;
	const char *argv[] = { "/bin/echo", "$(id)", ";", "`x`", NULL };
	struct sbx_capture c;
	assert_int_equal(capture(argv, 5000, 1024, &c), 0);
	assert_string_equal(c.out, "$(id) ; `x`\n");
	sbx_capture_free(&c);
}

static void last_line_skips_blank_lines_and_trims(void **state)
{
	(void)state;
	char out[64];
	sbx_last_line("first\n  bwrap: refused  \n\n \n", out, sizeof(out));
	assert_string_equal(out, "bwrap: refused");
	sbx_last_line("", out, sizeof(out));
	assert_string_equal(out, "");
	sbx_last_line("only", out, sizeof(out));
	assert_string_equal(out, "only");
}

/* A held child runs what it is sent at release: argv, the environment of
 * that moment, the cwd, and the fds it is given (stdout, extra fd 3). */
static void held_child_runs_what_it_is_released_with(void **state)
{
	(void)state;
	struct sbx_error e;
	struct sbx_spawn_holder h;
	struct sbx_spawn none = { .new_session = true };
	assert_int_equal(sbx_spawn_hold(&none, &h, &e), 0);
	int out[2], extra[2];
	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(extra), 0);
	assert_int_equal(write(extra[1], "via-3", 5), 5);
	close(extra[1]);
	setenv("SBX_HELD_TEST", "set-after-hold", 1);
	const char *argv[] = { "/bin/sh", "-c", "echo \"$SBX_HELD_TEST $(pwd) $(cat <&3) $(ps -o sid= -p $$ | tr -d ' ')\"",
			       NULL };
	char *env_copy[] = { "SBX_HELD_TEST=set-after-hold", "PATH=/usr/bin:/bin", NULL };
	struct sbx_spawn s = { .argv = argv, .envp = env_copy, .stdin_fd = -1, .stdout_fd = out[1], .stderr_fd = -1,
			       .extra_fds = &extra[0], .n_extra = 1, .cwd = "/" };
	pid_t held = h.pid;
	pid_t pid = sbx_spawn_release(&h, &s, NULL, &e);
	assert_int_equal(pid, held);
	close(out[1]);
	close(extra[0]);
	char buf[256] = "";
	ssize_t n = read(out[0], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	char want[256];
	snprintf(want, sizeof(want), "set-after-hold / via-3 %d\n", (int)pid); /* its own session */
	assert_string_equal(buf, want);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(out[0]);
	unsetenv("SBX_HELD_TEST");
}

static void held_child_reports_exec_failure_and_discard_reaps(void **state)
{
	(void)state;
	struct sbx_error e;
	struct sbx_spawn_holder h;
	struct sbx_spawn none = { 0 };
	assert_int_equal(sbx_spawn_hold(&none, &h, &e), 0);
	const char *argv[] = { "/nonexistent/program", NULL };
	struct sbx_spawn s = { .argv = argv, .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1 };
	int err = 0;
	assert_int_equal(sbx_spawn_release(&h, &s, &err, &e), -1);
	assert_int_equal(err, ENOENT);
	assert_int_equal(h.pid, -1);
	/* Never released: discard kills and reaps it (no zombie left). */
	assert_int_equal(sbx_spawn_hold(&none, &h, &e), 0);
	pid_t pid = h.pid;
	sbx_spawn_discard(&h);
	assert_int_equal(h.pid, -1);
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(errno, ESRCH);
}

/* The child's environment is the pass-list's: a token never passes, an
 * operator's name listed in SBX_PASS_ENV does, and one naming a secret
 * cannot be let through that way either. */
static void child_environment_comes_from_the_pass_list(void **state)
{
	(void)state;
	setenv("SCIENCE_AGENT_RUNNER_TOKEN", "tok-1", 1);
	setenv("SCIENCE_AGENT_DATA_DIR", "/data", 1);
	setenv("LAB_TOKEN", "tok-2", 1);
	setenv("UNRELATED_VARIABLE", "x", 1);
	setenv("OPERATOR_MIRROR", "m", 1);
	setenv("SBX_PASS_ENV", "OPERATOR_MIRROR,LAB_TOKEN", 1);
	setenv("MAPI_NONCE", "n", 1);
	const char *argv[] = { "/usr/bin/env", NULL };
	struct sbx_capture c;
	assert_int_equal(capture(argv, 5000, 1 << 16, &c), 0);
	assert_null(strstr(c.out, "tok-1"));
	assert_null(strstr(c.out, "tok-2"));
	assert_null(strstr(c.out, "UNRELATED_VARIABLE"));
	assert_null(strstr(c.out, "MAPI_NONCE"));
	assert_non_null(strstr(c.out, "SCIENCE_AGENT_DATA_DIR=/data\n"));
	assert_non_null(strstr(c.out, "OPERATOR_MIRROR=m\n"));
	assert_non_null(strstr(c.out, "PATH="));
	sbx_capture_free(&c);
	assert_false(sbx_child_env_passes("secret_key_file"));
	const char *secrets[] = { "SCIENCE_AGENT_API_KEY=x", "SBX_WEBHOOK_KEY=x", "SCIENCE_AGENT_HMAC=x",
				  "SBX_S3_ACCESS_KEY_ID=x", "SCIENCE_AGENT_APIKEY=x", "SBX_KEY_FILE=x" };
	for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
		assert_false(sbx_child_env_passes(secrets[i]));
	assert_true(sbx_child_env_passes("SCIENCE_AGENT_MICROMAMBA_SHA256=x"));
	assert_true(sbx_child_env_passes("SBX_UID_RANGE=x"));
	assert_true(sbx_child_env_passes("LC_ALL=C"));
	/* Taken: gone from the environment, the value erased where it was. */
	char *where = getenv("SCIENCE_AGENT_RUNNER_TOKEN");
	char *taken = sbx_env_take("SCIENCE_AGENT_RUNNER_TOKEN");
	assert_string_equal(taken, "tok-1");
	assert_null(getenv("SCIENCE_AGENT_RUNNER_TOKEN"));
	assert_int_equal(where[0], '\0');
	free(taken);
	const char *names[] = { "SCIENCE_AGENT_DATA_DIR", "LAB_TOKEN", "UNRELATED_VARIABLE", "OPERATOR_MIRROR",
				"SBX_PASS_ENV", "MAPI_NONCE" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unsetenv(names[i]);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(captures_stdout_and_stderr_apart),
		cmocka_unit_test(output_beyond_the_cap_is_dropped_and_flagged),
		cmocka_unit_test(deadline_kills_the_process_group),
		cmocka_unit_test(only_std_and_extra_fds_are_inherited),
		cmocka_unit_test(exec_failure_is_reported_with_errno),
		cmocka_unit_test(no_shell_interprets_arguments),
		cmocka_unit_test(last_line_skips_blank_lines_and_trims),
		cmocka_unit_test(held_child_runs_what_it_is_released_with),
		cmocka_unit_test(held_child_reports_exec_failure_and_discard_reaps),
		cmocka_unit_test(child_environment_comes_from_the_pass_list),
	};
	return cmocka_run_group_tests_name("spawn", tests, NULL, NULL);
}
