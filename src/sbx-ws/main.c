/* sbx-ws — remote workspaces by key (runner-api 5.7): list, read, verified
 * put, remove, and immutable snapshots of selected paths that outlive the
 * workspace; every operation works beneath the key's one directory fd.
 * JSON out, one command each; sbx-httpd runs it behind /remote-workspace. */
#include "ws.h"
#include "../lib/cli.h"
#include "../lib/datadir.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"

#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SAFE_INTEGER_MAX 9007199254740991LL

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-ws [OPTIONS] ls KEY [PATH...] | cat KEY PATH | put KEY PATH | rm KEY [PATH]\n"
		"                        | snapshot KEY [PATH...] | snapshot-cat KEY ID PATH | collect\n"
		"                        | versions KEY | diff KEY FROM TO | restore KEY VERSION\n"
		"                        | fork KEY VERSION [NEWKEY...]\n"
		"\n"
		"Remote workspaces below <data>/remote-workspaces/KEY. Prints JSON (cat: the bytes).\n"
		"See sbx-ws(1).\n"
		"\n"
		"  --data-dir DIR      (default: the sbx data dir)\n"
		"  --only              ls, snapshot: the PATHs are the selection, even when none\n"
		"  --fd-socket FD      cat, snapshot-cat: send the open file over this Unix socket\n"
		"                      (SCM_RIGHTS) and print {\"size\": N} instead of the bytes\n"
		"  --from-fd FD        put: the body is this open regular file (default: stdin)\n"
		"  --size N            put: the body must be exactly N bytes\n"
		"  --sha256 HEX        put: the body must have this SHA-256\n"
		"  --mode MODE         put: 644 plus exec bits (644, 744, 754, 755, ...; default 644)\n"
		"  --overwrite         put: replace a file already there (default: refuse)\n"
		"  --max-bytes N       put, snapshot, fork: the workspace quota (default\n"
		"                      $SCIENCE_AGENT_MAX_WORKSPACE_BYTES,\n"
		"                      else 10737418240; 0: none)\n"
		"  --keep N            collect: snapshots kept per key (default\n"
		"                      $SCIENCE_AGENT_REMOTE_SNAPSHOT_KEEP, else 20; 0: all)\n"
		"  --grace-s S         collect: an unreferenced object younger stays (default\n"
		"                      $SCIENCE_AGENT_REMOTE_SNAPSHOT_GRACE_SECONDS, else 3600)\n"
		"  --text              diff: a unified diff of each changed text file, bounded by\n"
		"  --max-text-files N  (default 20, at most 1000) and --max-text-bytes N (all diffs\n"
		"                      together; default 262144, at most 16777216)\n"
		"  --lease-wait-ms N   restore, fork and diff of \"live\": how long a run holding the\n"
		"                      workspace is waited for (default 30000)\n"
		"  --count N           fork: N new keys named KEY-fork-<8 hex> (1 to 64)\n"
		"  --help, --version\n");
	sbx_cli_print_exit_codes(out);
}

static long long env_integer(const char *name, long long dflt, long long max)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	return sbx_cli_parse_long(name, v, 0, max);
}

static mode_t parse_mode(const char *text)
{
	long m = strspn(text, "01234567") == strlen(text) && *text && strlen(text) <= 4 ? strtol(text, NULL, 8) : -1;
	if (m < 0 || (m & ~0755L) != 0 || (m & 0644) != 0644)
		sbx_cli_usage_error("sbx-ws", "--mode: 644 plus exec bits (644 to 755)");
	return (mode_t)m;
}

static int parse(int argc, char **argv, struct ws_opts *o)
{
	enum { OPT_DATA = 256, OPT_ONLY, OPT_FD_SOCKET, OPT_FROM_FD, OPT_SIZE, OPT_SHA, OPT_MODE, OPT_OVERWRITE,
	       OPT_MAX_BYTES, OPT_KEEP, OPT_GRACE, OPT_VERSION, OPT_TEXT, OPT_TEXT_FILES, OPT_TEXT_BYTES, OPT_WAIT,
	       OPT_COUNT };
	static const struct option options[] = {
		{ "data-dir", required_argument, NULL, OPT_DATA },
		{ "only", no_argument, NULL, OPT_ONLY },
		{ "fd-socket", required_argument, NULL, OPT_FD_SOCKET },
		{ "from-fd", required_argument, NULL, OPT_FROM_FD },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "sha256", required_argument, NULL, OPT_SHA },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "overwrite", no_argument, NULL, OPT_OVERWRITE },
		{ "max-bytes", required_argument, NULL, OPT_MAX_BYTES },
		{ "keep", required_argument, NULL, OPT_KEEP },
		{ "grace-s", required_argument, NULL, OPT_GRACE },
		{ "text", no_argument, NULL, OPT_TEXT },
		{ "max-text-files", required_argument, NULL, OPT_TEXT_FILES },
		{ "max-text-bytes", required_argument, NULL, OPT_TEXT_BYTES },
		{ "lease-wait-ms", required_argument, NULL, OPT_WAIT },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	*o = (struct ws_opts){ .fd_socket = -1, .from_fd = -1, .size = -1, .mode = 0644, .text_files = 20,
			       .text_bytes = 256 * 1024, .lease_wait_ms = 30000 };
	o->max_bytes = env_integer("SCIENCE_AGENT_MAX_WORKSPACE_BYTES", 10737418240LL, SAFE_INTEGER_MAX);
	o->keep = env_integer("SCIENCE_AGENT_REMOTE_SNAPSHOT_KEEP", 20, 1 << 20);
	o->grace_s = env_integer("SCIENCE_AGENT_REMOTE_SNAPSHOT_GRACE_SECONDS", 3600, 86400L * 365);
	if (sbx_data_dir(o->data, sizeof(o->data)) != 0)
		o->data[0] = '\0';
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case OPT_DATA:
			if (strlen(optarg) >= PATH_MAX - 128)
				sbx_cli_usage_error("sbx-ws", "--data-dir: too long");
			strcpy(o->data, optarg);
			break;
		case OPT_ONLY: o->only = true; break;
		case OPT_FD_SOCKET: o->fd_socket = (int)sbx_cli_parse_long("--fd-socket", optarg, 3, 1 << 20); break;
		case OPT_FROM_FD: o->from_fd = (int)sbx_cli_parse_long("--from-fd", optarg, 0, 1 << 20); break;
		case OPT_SIZE: o->size = sbx_cli_parse_long("--size", optarg, 0, SAFE_INTEGER_MAX); break;
		case OPT_SHA:
			if (strlen(optarg) != 64 || strspn(optarg, "0123456789abcdef") != 64)
				sbx_cli_usage_error("sbx-ws", "--sha256: 64 lowercase hex digits");
			o->sha256 = optarg;
			break;
		case OPT_MODE: o->mode = parse_mode(optarg); break;
		case OPT_OVERWRITE: o->overwrite = true; break;
		case OPT_MAX_BYTES: o->max_bytes = sbx_cli_parse_long("--max-bytes", optarg, 0, SAFE_INTEGER_MAX); break;
		case OPT_KEEP: o->keep = sbx_cli_parse_long("--keep", optarg, 0, 1 << 20); break;
		case OPT_GRACE: o->grace_s = sbx_cli_parse_long("--grace-s", optarg, 0, 86400L * 365); break;
		case OPT_TEXT: o->text = true; break;
		case OPT_TEXT_FILES: o->text_files = (unsigned)sbx_cli_parse_long("--max-text-files", optarg, 0, 1000); break;
		case OPT_TEXT_BYTES: o->text_bytes = (unsigned)sbx_cli_parse_long("--max-text-bytes", optarg, 0, 16 << 20); break;
		case OPT_WAIT: o->lease_wait_ms = sbx_cli_parse_long("--lease-wait-ms", optarg, 0, 86400000); break;
		case OPT_COUNT: o->count = sbx_cli_parse_long("--count", optarg, 1, FORK_KEYS_MAX); break;
		case 'h': usage(stdout); exit(SBX_EXIT_OK);
		case OPT_VERSION: sbx_cli_print_version("sbx-ws"); exit(SBX_EXIT_OK);
		default: sbx_cli_bad_option("sbx-ws", argv[optind - 1]);
		}
	}
	if (!o->data[0])
		sbx_cli_usage_error("sbx-ws", "no data directory (--data-dir)");
	if (optind >= argc)
		sbx_cli_usage_error("sbx-ws", "a command is required (see --help)");
	return optind;
}

/* Exactly n operands after the command, or between min and max. */
static void operands(int have, int min, int max, const char *command)
{
	char msg[128];
	if (have >= min && have <= max)
		return;
	snprintf(msg, sizeof(msg), "%s: wrong number of operands (see --help)", command);
	sbx_cli_usage_error("sbx-ws", msg);
}

int main(int argc, char **argv)
{
	struct ws_opts o;
	struct sbx_error e = { 0 };
	sbx_diag_program("sbx-ws");
	int i = parse(argc, argv, &o);
	const char *cmd = argv[i];
	char **args = argv + i + 1;
	int n = argc - i - 1, rc;
	umask(022);
	if (!strcmp(cmd, "ls")) {
		operands(n, 1, 1 + 1000, cmd);
		rc = ws_ls(&o, args[0], args + 1, n - 1, &e);
	} else if (!strcmp(cmd, "cat")) {
		operands(n, 2, 2, cmd);
		rc = ws_cat(&o, args[0], args[1], &e);
	} else if (!strcmp(cmd, "put")) {
		operands(n, 2, 2, cmd);
		rc = ws_put(&o, args[0], args[1], &e);
	} else if (!strcmp(cmd, "rm")) {
		operands(n, 1, 2, cmd);
		rc = ws_rm(&o, args[0], n == 2 ? args[1] : NULL, &e);
	} else if (!strcmp(cmd, "snapshot")) {
		operands(n, 1, 1 + 1000, cmd);
		rc = ws_snapshot(&o, args[0], args + 1, n - 1, &e);
	} else if (!strcmp(cmd, "snapshot-cat")) {
		operands(n, 3, 3, cmd);
		rc = ws_snapshot_cat(&o, args[0], args[1], args[2], &e);
	} else if (!strcmp(cmd, "collect")) {
		operands(n, 0, 0, cmd);
		rc = ws_collect(&o, &e);
	} else if (!strcmp(cmd, "versions") || !strcmp(cmd, "diff") || !strcmp(cmd, "restore")) {
		int ops = !strcmp(cmd, "versions") ? 0 : !strcmp(cmd, "diff") ? 2 : 1;
		operands(n, 1 + ops, 1 + ops, cmd);
		rc = ws_history(&o, cmd, args[0], args + 1, ops, &e);
	} else if (!strcmp(cmd, "fork")) {
		operands(n, 2, 2 + FORK_KEYS_MAX, cmd);
		rc = ws_fork(&o, args[0], args[1], args + 2, n - 2, &e);
	} else {
		sbx_cli_usage_error("sbx-ws", "unknown command (see --help)");
	}
	if (rc != 0)
		sbx_die(&e);
	return fflush(stdout) == 0 ? SBX_EXIT_OK : SBX_EXIT_INTERNAL;
}
