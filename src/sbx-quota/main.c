/* sbx-quota — what a tree costs, in bytes and names (`usage`), or a program
 * run under those limits on a tree (`watch`): killed, with its process
 * group, on a breach. */
#include "../lib/cli.h"
#include "../lib/program_path.h"
#include "../lib/clock.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "../lib/quota.h"
#include "../lib/quota_watch.h"
#include "../lib/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-quota usage PATH\n"
		"       sbx-quota watch --max-bytes N [--max-files F] [--interval-ms MS] PATH -- PROGRAM [ARG...]\n"
		"\n"
		"usage  prints {bytes, diskBytes, chargedBytes, inodes, entries, files, dirs, symlinks,\n"
		"       other, hardlinksDeduped, errors, errorsTotal}\n"
		"watch  runs PROGRAM and kills its process group when PATH is charged more than N bytes\n"
		"       or holds more than F names (0: no such limit; default 0); checked every MS\n"
		"       milliseconds, default %d; exits with the program's status, or %d on a breach.\n"
		"       See sbx-quota(1).\n",
		SBX_QUOTA_INTERVAL_MS, SBX_EXIT_RESOURCE);
	sbx_cli_print_exit_codes(out);
}

static int cmd_usage(int argc, char **argv)
{
	struct sbx_usage u;
	struct sbx_error e;

	if (argc != 1)
		sbx_cli_usage_error("sbx-quota", "usage takes exactly one PATH");
	if (sbx_quota_usage(argv[0], &u, &e) != 0)
		sbx_die(&e);
	json_t *out = sbx_usage_json(&u);
	int rc = sbx_json_print(stdout, out) == 0 ? SBX_EXIT_OK : SBX_EXIT_INTERNAL;
	json_decref(out);
	sbx_usage_free(&u);
	return rc;
}

static int cmd_watch(int argc, char **argv)
{
	static const struct option options[] = {
		{ "max-bytes", required_argument, NULL, 'm' },
		{ "max-files", required_argument, NULL, 'f' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	long long max = -1, max_files = 0;
	int interval = SBX_QUOTA_INTERVAL_MS, c;
	struct sbx_error e;

	optind = 1;
	while ((c = getopt_long(argc + 1, argv - 1, "+", options, NULL)) != -1) {
		if (c == 'm')
			max = sbx_cli_parse_long("--max-bytes", optarg, 0, LONG_MAX);
		else if (c == 'f')
			max_files = sbx_cli_parse_long("--max-files", optarg, 0, LONG_MAX);
		else if (c == 'i')
			interval = (int)sbx_cli_parse_long("--interval-ms", optarg, 1, 3600000);
		else
			sbx_cli_bad_option("sbx-quota", argv[optind - 2]);
	}
	argc -= optind - 1;
	argv += optind - 1;
	if (max < 0)
		sbx_cli_usage_error("sbx-quota", "watch needs --max-bytes");
	if (argc < 3 || strcmp(argv[1], "--") != 0)
		sbx_cli_usage_error("sbx-quota", "watch needs PATH -- PROGRAM [ARG...]");
	const char *root = argv[0];
	if (access(root, R_OK | X_OK) != 0) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "bad-path", "%s: %s", root, strerror(errno));
		sbx_die(&e);
	}
	char program[PATH_MAX];
	if (!sbx_find_executable(argv[2], program, sizeof(program))) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "not-found", "%.200s: no such program", argv[2]);
		sbx_die(&e);
	}
	argv[2] = program;
	struct sbx_spawn s = { .argv = (const char *const *)argv + 2, .stdin_fd = 0, .stdout_fd = 1,
			       .stderr_fd = 2, .new_process_group = true };
	pid_t pid = sbx_spawn_start(&s, NULL, &e);
	if (pid < 0) {
		e.exit_code = SBX_EXIT_USAGE;
		sbx_die(&e);
	}
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	uint64_t bytes = 0;
	enum sbx_quota_state q = SBX_QUOTA_FITS;
	for (long long next = sbx_mono_ms() + interval;;) {
		long long wait = next - sbx_mono_ms();
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		int r = poll(&p, 1, wait > 0 ? (int)wait : 0);
		if (r > 0)
			break; /* the program exited */
		if (r < 0 && errno != EINTR)
			break;
		if (r == 0) {
			next += interval;
			int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
			q = fd < 0 ? SBX_QUOTA_FITS : sbx_quota_check_at(fd, (uint64_t)max, (uint64_t)max_files, &bytes);
			if (fd >= 0)
				close(fd);
			if (sbx_quota_over(q)) {
				kill(-pid, SIGKILL);
				break;
			}
		}
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	close(pidfd);
	char message[512];
	if (sbx_quota_breach(q, true, (uint64_t)max, (uint64_t)max_files, message, sizeof(message))) {
		if (q == SBX_QUOTA_OVER)
			sbx_diag("error", "quota-exceeded", NULL, "%s (%s was charged %llu bytes)", message, root,
				 (unsigned long long)bytes);
		else
			sbx_diag("error", "quota-exceeded", NULL, "%s (%s held more than %lld names)", message, root,
				 max_files);
		return SBX_EXIT_RESOURCE;
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
	sbx_diag_program("sbx-quota");
	if (argc < 2)
		sbx_cli_usage_error("sbx-quota", "a command is required: usage or watch");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return SBX_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		sbx_cli_print_version("sbx-quota");
		return SBX_EXIT_OK;
	}
	if (!strcmp(argv[1], "usage"))
		return cmd_usage(argc - 2, argv + 2);
	if (!strcmp(argv[1], "watch"))
		return cmd_watch(argc - 2, argv + 2);
	sbx_cli_usage_error("sbx-quota", "unknown command; use usage or watch");
}
