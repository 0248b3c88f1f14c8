/* test_seccomp.c — every profile compiles for x86_64 and aarch64; loaded
 * natively in a child, each profile answers as its table says; compiled
 * programs are cached and a cache file others could write is not trusted;
 * split for reporting, the two halves refuse what the whole did. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "seccomp_build.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tmpdir.h"

/* The filter's text as libseccomp prints it (PFC). */
static char *pfc(scmp_filter_ctx ctx)
{
	int fd = memfd_create("pfc", 0);
	assert_true(fd >= 0);
	assert_int_equal(seccomp_export_pfc(ctx, fd), 0);
	off_t size = lseek(fd, 0, SEEK_END);
	char *text = calloc(1, (size_t)size + 1);
	assert_int_equal(pread(fd, text, (size_t)size, 0), size);
	close(fd);
	return text;
}

static void every_profile_compiles_for_both_arches(void **state)
{
	(void)state;
	const uint32_t arches[] = { SCMP_ARCH_X86_64, SCMP_ARCH_AARCH64 };
	for (size_t a = 0; a < 2; a++) {
		for (int p = 0; p < SBX_SECCOMP_PROFILE_COUNT; p++) {
			struct sbx_error e;
			scmp_filter_ctx ctx = sbx_seccomp_build(p, arches[a], &e);
			assert_non_null(ctx);
			int fd = memfd_create("bpf", 0);
			assert_int_equal(seccomp_export_bpf(ctx, fd), 0);
			off_t size = lseek(fd, 0, SEEK_END);
			assert_true(size > 0 && size % 8 == 0);
			close(fd);
			char *text = pfc(ctx);
			/* The filter is for that arch alone, with the rules by name. */
			assert_non_null(strstr(text, "kexec_file_load"));
			assert_non_null(strstr(text, "clone3"));
			assert_non_null(strstr(text, "io_uring_setup"));
			assert_non_null(strstr(text, "action KILL_PROCESS"));
			free(text);
			seccomp_release(ctx);
			/* The notifying part, with its refusal of new listeners. */
			ctx = sbx_seccomp_build_part(p, SBX_FILTER_NOTIFY, arches[a], &e);
			assert_non_null(ctx);
			text = pfc(ctx);
			assert_non_null(strstr(text, "filter for syscall \"seccomp\""));
			assert_non_null(strstr(text, "action ERRNO(16)")); /* EBUSY */
			/* SECCOMP_RET_USER_NOTIF, by name or number as the libseccomp version prints it */
			assert_true(strstr(text, "action NOTIFY") || strstr(text, "action 0x7fc00000"));
			free(text);
			seccomp_release(ctx);
		}
	}
}

static void aarch64_filter_skips_calls_that_arch_lacks(void **state)
{
	(void)state;
	struct sbx_error e;
	scmp_filter_ctx ctx = sbx_seccomp_build(SBX_SECCOMP_BASELINE, SCMP_ARCH_AARCH64, &e);
	char *text = pfc(ctx);
	assert_null(strstr(text, "\"uselib\""));
	assert_non_null(strstr(text, "\"kcmp\""));
	free(text);
	seccomp_release(ctx);
	ctx = sbx_seccomp_build(SBX_SECCOMP_BASELINE, SCMP_ARCH_X86_64, &e);
	text = pfc(ctx);
	assert_non_null(strstr(text, "\"uselib\""));
	free(text);
	seccomp_release(ctx);
}

static void unsupported_arch_is_refused(void **state)
{
	(void)state;
	struct sbx_error e;
	assert_null(sbx_seccomp_build(SBX_SECCOMP_BASELINE, SCMP_ARCH_PPC64LE, &e));
	assert_string_equal(e.code, "seccomp-arch");
}

/* Loads profile p in a child, makes one call there, returns its errno (0 = ok). */
/* modify_ldt(0, NULL, 0), or EPERM where the arch has no such call. */
static long modify_ldt_call(void)
{
#ifdef SYS_modify_ldt
	return syscall(SYS_modify_ldt, 0, NULL, 0);
#else
	errno = EPERM;
	return -1;
#endif
}

/* The errno a forked probe exited with. */
static int child_errno(pid_t pid)
{
	int st;
	waitpid(pid, &st, 0);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static int errno_under(enum sbx_seccomp_profile p, int what)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sbx_error e;
		scmp_filter_ctx ctx = sbx_seccomp_build(p, SCMP_ARCH_NATIVE, &e);
		if (!ctx || seccomp_load(ctx) != 0)
			_exit(255);
		long r;
		switch (what) {
		case 0: r = socket(AF_INET, SOCK_STREAM, 0); break;
		case 1: r = socket(AF_NETLINK, SOCK_RAW, 0); break;
		case 2: r = socket(AF_UNIX, SOCK_STREAM, 0); break;
		case 3: r = syscall(SYS_personality, 0xffffffffUL); break;
		case 4: r = syscall(SYS_clone3, NULL, 0); break;
		default: r = modify_ldt_call(); break;
		}
		_exit(r < 0 ? errno : 0);
	}
	return child_errno(pid);
}

static void profiles_differ_only_where_the_table_says(void **state)
{
	(void)state;
	assert_int_equal(errno_under(SBX_SECCOMP_BASELINE, 0), EPERM);
	assert_int_equal(errno_under(SBX_SECCOMP_NETWORK, 0), 0);
	assert_int_equal(errno_under(SBX_SECCOMP_NPU, 0), 0);
	for (int p = 0; p < SBX_SECCOMP_PROFILE_COUNT; p++) {
		assert_int_equal(errno_under(p, 1), EAFNOSUPPORT);
		assert_int_equal(errno_under(p, 2), 0);
		assert_int_equal(errno_under(p, 3), 0);
		assert_int_equal(errno_under(p, 4), ENOSYS);
		assert_int_equal(errno_under(p, 5), EPERM);
	}
}

/* Loads the split filter (the unreported rows, then the notifying ones
 * with a listener that is closed at once) in a child, makes one call. */
static int errno_under_split(enum sbx_seccomp_profile p, int what)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sbx_error e;
		scmp_filter_ctx rest = sbx_seccomp_build_part(p, SBX_FILTER_UNREPORTED, SCMP_ARCH_NATIVE, &e);
		scmp_filter_ctx notify = sbx_seccomp_build_part(p, SBX_FILTER_NOTIFY, SCMP_ARCH_NATIVE, &e);
		if (!rest || !notify || seccomp_load(rest) != 0 || seccomp_load(notify) != 0)
			_exit(255);
		int fd = seccomp_notify_fd(notify);
		if (fd < 0)
			_exit(254);
		close(fd); /* the supervisor is gone */
		long r;
		switch (what) {
		case 0: r = socket(AF_INET, SOCK_STREAM, 0); break;
		case 1: r = socket(AF_NETLINK, SOCK_RAW, 0); break;
		case 2: r = syscall(SYS_ptrace, 0, 0, 0, 0); break;
		case 3: r = syscall(SYS_clone3, NULL, 0); break;
		case 4: r = syscall(SYS_mount, "none", "/", "tmpfs", 0, NULL); break;
		case 6: { /* a listener of the workload's own, to answer CONTINUE */
			struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
			struct sock_fprog prog = { .len = 1, .filter = &allow };
			r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
			break;
		}
		default: r = getpid() > 0 ? 0 : -1; break;
		}
		_exit(r < 0 ? errno : 0);
	}
	return child_errno(pid);
}

/* Split in two, the policy still refuses every call it refused whole:
 * the rows libc probes with their errno, the reported rows with ENOSYS
 * when no listener answers (never let through). */
static void a_split_filter_refuses_even_without_its_listener(void **state)
{
	(void)state;
	assert_int_equal(errno_under_split(SBX_SECCOMP_BASELINE, 0), ENOSYS);
	assert_int_equal(errno_under_split(SBX_SECCOMP_NETWORK, 0), 0);
	for (int p = 0; p < SBX_SECCOMP_PROFILE_COUNT; p++) {
		assert_int_equal(errno_under_split(p, 1), EAFNOSUPPORT);
		assert_int_equal(errno_under_split(p, 2), ENOSYS);
		assert_int_equal(errno_under_split(p, 3), ENOSYS);
		assert_int_equal(errno_under_split(p, 4), ENOSYS);
		assert_int_equal(errno_under_split(p, 5), 0);
		/* The kernel forgets a closed listener: without this refusal the
		 * workload could load one of its own and let every call through. */
		assert_int_equal(errno_under_split(p, 6), EBUSY);
	}
	/* Every row lands in exactly one part. */
	for (size_t i = 0; i < sbx_seccomp_rules_len; i++)
		assert_true(sbx_seccomp_rule_reported(&sbx_seccomp_rules[i]) == (sbx_seccomp_rules[i].error == EPERM));
}

static void *thread_ok(void *arg)
{
	return arg;
}

/* Loads the gateway's filter in a child, makes one call there, returns
 * its errno (0 = ok). */
static int errno_under_gateway(int what)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sbx_error e;
		scmp_filter_ctx ctx = sbx_seccomp_build_gateway(SCMP_ARCH_NATIVE, &e);
		if (!ctx || seccomp_load(ctx) != 0)
			_exit(255);
		char *const argv[] = { "true", NULL };
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
		pthread_t t;
		void *back = NULL;
		long r;
		switch (what) {
		case 0: r = execv("/bin/true", argv); break;
		case 1: r = syscall(SYS_execveat, AT_FDCWD, "/bin/true", argv, NULL, 0); break;
		case 2: r = socket(AF_INET, SOCK_STREAM, 0); break;
		case 3: r = socket(AF_NETLINK, SOCK_RAW, 0); break;
		case 4: r = unshare(CLONE_NEWUSER); break;
		/* /etc/hosts through NSS: what the gateway's resolver reads. */
		case 5: r = getaddrinfo("localhost", "80", &hints, &res) == 0 && res ? 0 : (errno = ENOENT, -1); break;
		case 6: r = pthread_create(&t, NULL, thread_ok, &hints) == 0 && pthread_join(t, &back) == 0 &&
			      back == &hints ? 0 : (errno = EAGAIN, -1); break;
		case 7: r = syscall(SYS_ptrace, 2, 0, 0, 0); break;
		default: r = modify_ldt_call(); break;
		}
		_exit(r < 0 ? errno : 0);
	}
	return child_errno(pid);
}

static void gateway_filter_refuses_exec_and_keeps_what_a_relay_needs(void **state)
{
	(void)state;
	const uint32_t arches[] = { SCMP_ARCH_X86_64, SCMP_ARCH_AARCH64 };
	for (size_t a = 0; a < 2; a++) {
		struct sbx_error e;
		scmp_filter_ctx ctx = sbx_seccomp_build_gateway(arches[a], &e);
		assert_non_null(ctx);
		char *text = pfc(ctx);
		assert_non_null(strstr(text, "execveat"));
		assert_non_null(strstr(text, "io_uring_setup"));
		assert_non_null(strstr(text, "action KILL_PROCESS"));
		free(text);
		seccomp_release(ctx);
	}
	assert_int_equal(errno_under_gateway(0), EPERM);
	assert_int_equal(errno_under_gateway(1), EPERM);
	assert_int_equal(errno_under_gateway(2), 0);
	assert_int_equal(errno_under_gateway(3), EAFNOSUPPORT);
	assert_int_equal(errno_under_gateway(4), EPERM);
	if (access("/etc/hosts", R_OK) == 0)
		assert_int_equal(errno_under_gateway(5), 0);
	assert_int_equal(errno_under_gateway(6), 0);
	assert_int_equal(errno_under_gateway(7), EPERM);
	assert_int_equal(errno_under_gateway(8), EPERM);
}

static char *cache_file(void)
{
	char cmd[160];
	static char path[256];
	snprintf(cmd, sizeof(cmd), "ls %s/seccomp-baseline-*.bpf 2>/dev/null", dir);
	FILE *p = popen(cmd, "r");
	path[0] = '\0';
	if (p) {
		if (!fgets(path, sizeof(path), p))
			path[0] = '\0';
		pclose(p);
	}
	path[strcspn(path, "\n")] = '\0';
	return path;
}

static void programs_are_cached_and_sealed(void **state)
{
	(void)state;
	struct sbx_error e;
	struct sbx_seccomp_program a, b;
	struct stat st;

	assert_int_equal(sbx_seccomp_program(SBX_SECCOMP_BASELINE, dir, &a, &e), 0);
	assert_false(a.from_cache);
	assert_true(a.instructions > 10);
	assert_int_equal(stat(cache_file(), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal((size_t)st.st_size, a.instructions * 8);

	assert_int_equal(sbx_seccomp_program(SBX_SECCOMP_BASELINE, dir, &b, &e), 0);
	assert_true(b.from_cache);
	assert_int_equal(a.instructions, b.instructions);
	/* The memfd cannot be altered by whoever holds it. */
	assert_int_equal(write(b.fd, "x", 1), -1);
	assert_int_equal(errno, EPERM);
	close(a.fd);
	close(b.fd);
}

static void untrusted_or_truncated_cache_is_rebuilt(void **state)
{
	(void)state;
	struct sbx_error e;
	struct sbx_seccomp_program p;

	assert_int_equal(sbx_seccomp_program(SBX_SECCOMP_BASELINE, dir, &p, &e), 0);
	close(p.fd);
	assert_int_equal(chmod(cache_file(), 0666), 0);
	assert_int_equal(sbx_seccomp_program(SBX_SECCOMP_BASELINE, dir, &p, &e), 0);
	assert_false(p.from_cache);
	close(p.fd);
	assert_int_equal(truncate(cache_file(), 12), 0);
	assert_int_equal(sbx_seccomp_program(SBX_SECCOMP_BASELINE, dir, &p, &e), 0);
	assert_false(p.from_cache);
	close(p.fd);
	assert_int_equal(sbx_seccomp_program(SBX_SECCOMP_BASELINE, dir, &p, &e), 0);
	assert_true(p.from_cache);
	close(p.fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_profile_compiles_for_both_arches),
		cmocka_unit_test(aarch64_filter_skips_calls_that_arch_lacks),
		cmocka_unit_test(unsupported_arch_is_refused),
		cmocka_unit_test(profiles_differ_only_where_the_table_says),
		cmocka_unit_test(a_split_filter_refuses_even_without_its_listener),
		cmocka_unit_test(gateway_filter_refuses_exec_and_keeps_what_a_relay_needs),
		cmocka_unit_test_setup_teardown(programs_are_cached_and_sealed, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(untrusted_or_truncated_cache_is_rebuilt, make_dir, remove_dir),
	};
	return cmocka_run_group_tests_name("seccomp", tests, NULL, NULL);
}
