/* sbx-snap — content-addressed workspace snapshots: commit, diff, restore,
 * log, gc, and a workspace's history: its versions, a diff between two, a
 * reset to one, forks of one. Every command prints one JSON object (log:
 * one per line). */
#include "../lib/cli.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "snap.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-snap commit WORKSPACE --store DIR [--ref NAME] [--max-manifest-bytes N]\n"
		"       sbx-snap diff A B --store DIR [WS] [--text [--max-text-files N] [--max-text-bytes N]\n"
		"                [--max-text-ms N]]\n"
		"       sbx-snap restore DIGEST DIR --store DIR\n"
		"       sbx-snap restore VERSION --store DIR WS [--state-dir DIR] [--lease-wait-ms N] [--no-verify]\n"
		"       sbx-snap versions --store DIR WS\n"
		"       sbx-snap fork [VERSION] --store DIR WS (--into DIR... | --into-fd FD...)\n"
		"                [--max-bytes N] [--state-dir DIR] [--lease-wait-ms N] [--no-verify]\n"
		"       sbx-snap log --ref NAME --store DIR\n"
		"       sbx-snap gc --store DIR [--keep N] [--min-age-s S] [--lock-fd FD]\n"
		"\n"
		"WS: --workspace DIR or --workspace-fd FD, a workspace whose history (the ref\n"
		"sbx-run commits it under) names the versions: \"latest\", \"latest~N\" (N before),\n"
		"a digest it holds, or \"live\" (the tree as it is now, committed under the lease).\n"
		"commit prints the receipt {digest, size, files, bytes, mediaType, pool,\n"
		"hashedFiles, manifestStored[, ref]}; a manifest over --max-manifest-bytes\n"
		"(default 64 MiB) is refused (exit 6). gc keeps the last --keep versions of\n"
		"every ref (default 20; 0: all) and removes what nothing kept reaches, once\n"
		"older than --min-age-s (default 60); --lock-fd: <store>/gc.lock, flocked.\n"
		"See sbx-snap(1).\n");
	sbx_cli_print_exit_codes(out);
}

enum { O_STORE = 's', O_REF = 'r', O_MANIFEST = 'm', O_KEEP = 'k', O_AGE = 'a', O_LOCK = 'l', O_WS = 'w',
       O_WS_FD = 'W', O_TEXT = 't', O_TEXT_FILES = 'F', O_TEXT_BYTES = 'B', O_INTO = 'i', O_INTO_FD = 'I',
       O_STATE = 'S', O_WAIT = 'L', O_MAX_BYTES = 'M', O_NO_VERIFY = 'n', O_TEXT_MS = 'T' };

static void option(struct args *a, int c, const char *arg)
{
	switch (c) {
	case O_STORE: a->store = arg; break;
	case O_REF: a->ref = arg; break;
	case O_MANIFEST:
		a->max_manifest = (uint64_t)sbx_cli_parse_long("--max-manifest-bytes", arg, 1024, (long)SBX_SNAP_MANIFEST_READ_MAX);
		break;
	case O_KEEP: a->gc.keep = (unsigned)sbx_cli_parse_long("--keep", arg, 0, 100000), a->gc_options = true; break;
	case O_AGE: a->gc.min_age_s = (unsigned)sbx_cli_parse_long("--min-age-s", arg, 0, 86400 * 365), a->gc_options = true; break;
	case O_LOCK: a->gc.lock_fd = (int)sbx_cli_parse_long("--lock-fd", arg, 3, 65535), a->gc_options = true; break;
	case O_WS: a->workspace = arg; break;
	case O_WS_FD: a->workspace_fd = (int)sbx_cli_parse_long("--workspace-fd", arg, 0, 65535); break;
	case O_TEXT: a->text = true; break;
	case O_TEXT_FILES: a->text_files = (unsigned)sbx_cli_parse_long("--max-text-files", arg, 0, TEXT_FILES_MAX); break;
	case O_TEXT_BYTES: a->text_bytes = (unsigned)sbx_cli_parse_long("--max-text-bytes", arg, 0, TEXT_BYTES_MAX); break;
	case O_TEXT_MS: a->text_ms = (unsigned)sbx_cli_parse_long("--max-text-ms", arg, 0, TEXT_MS_MAX); break;
	case O_INTO:
	case O_INTO_FD:
		if (a->n_into + a->n_into_fd == FORK_MAX)
			sbx_cli_usage_error("sbx-snap", "at most 64 forks at once (--into, --into-fd)");
		if (c == O_INTO)
			a->into[a->n_into++] = arg;
		else
			a->into_fd[a->n_into_fd++] = (int)sbx_cli_parse_long("--into-fd", arg, 0, 65535);
		break;
	case O_STATE: a->state_dir = arg; break;
	case O_WAIT: a->lease_wait_ms = (unsigned)sbx_cli_parse_long("--lease-wait-ms", arg, 0, 86400000); break;
	case O_MAX_BYTES: a->max_bytes = (uint64_t)sbx_cli_parse_long("--max-bytes", arg, 0, INT64_MAX); break;
	case O_NO_VERIFY: a->no_verify = true; break;
	default: break;
	}
}

static void parse(int argc, char **argv, struct args *a)
{
	static const struct option options[] = {
		{ "store", required_argument, NULL, O_STORE },
		{ "ref", required_argument, NULL, O_REF },
		{ "max-manifest-bytes", required_argument, NULL, O_MANIFEST },
		{ "keep", required_argument, NULL, O_KEEP },
		{ "min-age-s", required_argument, NULL, O_AGE },
		{ "lock-fd", required_argument, NULL, O_LOCK },
		{ "workspace", required_argument, NULL, O_WS },
		{ "workspace-fd", required_argument, NULL, O_WS_FD },
		{ "text", no_argument, NULL, O_TEXT },
		{ "max-text-files", required_argument, NULL, O_TEXT_FILES },
		{ "max-text-bytes", required_argument, NULL, O_TEXT_BYTES },
		{ "max-text-ms", required_argument, NULL, O_TEXT_MS },
		{ "into", required_argument, NULL, O_INTO },
		{ "into-fd", required_argument, NULL, O_INTO_FD },
		{ "state-dir", required_argument, NULL, O_STATE },
		{ "lease-wait-ms", required_argument, NULL, O_WAIT },
		{ "max-bytes", required_argument, NULL, O_MAX_BYTES },
		{ "no-verify", no_argument, NULL, O_NO_VERIFY },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof(*a));
	a->max_manifest = SBX_SNAP_MANIFEST_MAX_DEFAULT;
	a->gc = (struct sbx_snap_gc_opts){ SBX_SNAP_KEEP_DEFAULT, SBX_SNAP_MIN_AGE_DEFAULT, -1 };
	a->workspace_fd = -1;
	a->text_files = TEXT_FILES_DEFAULT;
	a->text_bytes = TEXT_BYTES_DEFAULT;
	a->text_ms = TEXT_MS_DEFAULT;
	a->lease_wait_ms = 30000;
	opterr = 0;
	optind = 2;
	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		if (c == '?')
			sbx_cli_bad_option("sbx-snap", argv[optind - 1]);
		option(a, c, optarg);
	}
	for (; optind < argc; optind++) {
		if (a->npos == 3)
			sbx_cli_usage_error("sbx-snap", "too many arguments");
		a->pos[a->npos++] = argv[optind];
	}
	if (!a->store || !*a->store)
		sbx_cli_usage_error("sbx-snap", "--store DIR is required");
	if (a->workspace && a->workspace_fd >= 0)
		sbx_cli_usage_error("sbx-snap", "--workspace and --workspace-fd exclude each other");
	if (a->n_into && a->n_into_fd)
		sbx_cli_usage_error("sbx-snap", "--into and --into-fd exclude each other");
}

static void need(const struct args *a, int n, const char *what)
{
	if (a->npos != n)
		sbx_cli_usage_error("sbx-snap", what);
}

static bool has_ws(const struct args *a)
{
	return a->workspace || a->workspace_fd >= 0;
}

static int emit(json_t *v, struct sbx_error *e)
{
	if (!v)
		sbx_die(e);
	return sbx_json_answer(v);
}

static int restore(struct args *a, struct sbx_error *e)
{
	if (has_ws(a)) {
		need(a, 1, "restore with a workspace takes one VERSION");
		return emit(snap_reset(a, a->pos[0], e), e);
	}
	need(a, 2, "restore takes DIGEST DIR (or VERSION and --workspace)");
	char digest[72];
	if (sbx_snap_resolve(a->store, a->pos[0], digest, e) != 0 || snap_restore_into(a->store, digest, a->pos[1], e) != 0)
		sbx_die(e);
	return emit(json_pack("{s:s,s:s}", "digest", digest, "restoredTo", a->pos[1]), e);
}

static int log_of(const struct args *a, struct sbx_error *e)
{
	need(a, 0, "log takes --ref NAME only");
	if (!a->ref)
		sbx_cli_usage_error("sbx-snap", "log needs --ref NAME");
	json_t *log = sbx_snap_log(a->store, a->ref, e);
	if (!log)
		sbx_die(e);
	size_t i;
	json_t *row;
	json_array_foreach(log, i, row)
		sbx_json_print(stdout, row);
	json_decref(log);
	return SBX_EXIT_OK;
}

/* Options that belong to some commands only. */
static void check_options(const struct args *a, const char *cmd)
{
	bool history = !strcmp(cmd, "diff") || !strcmp(cmd, "restore") || !strcmp(cmd, "versions") || !strcmp(cmd, "fork");
	bool leased = !strcmp(cmd, "restore") || !strcmp(cmd, "fork") || !strcmp(cmd, "diff");
	if (a->gc_options && strcmp(cmd, "gc") != 0)
		sbx_cli_usage_error("sbx-snap", "--keep, --min-age-s and --lock-fd are gc's options");
	if (has_ws(a) && !history)
		sbx_cli_usage_error("sbx-snap", "--workspace and --workspace-fd are for diff, restore, versions and fork");
	if ((a->state_dir || a->no_verify) && !leased)
		sbx_cli_usage_error("sbx-snap", "--state-dir and --no-verify are for restore, fork and diff");
	if ((a->n_into || a->n_into_fd || a->max_bytes) && strcmp(cmd, "fork") != 0)
		sbx_cli_usage_error("sbx-snap", "--into, --into-fd and --max-bytes are fork's options");
	if (a->text && strcmp(cmd, "diff") != 0)
		sbx_cli_usage_error("sbx-snap", "--text is diff's option");
	if ((!strcmp(cmd, "versions") || !strcmp(cmd, "fork")) && !has_ws(a))
		sbx_cli_usage_error("sbx-snap", "versions and fork need --workspace DIR or --workspace-fd FD");
	if (!strcmp(cmd, "fork") && !a->n_into && !a->n_into_fd)
		sbx_cli_usage_error("sbx-snap", "fork needs --into DIR or --into-fd FD (once per fork)");
}

int main(int argc, char **argv)
{
	struct sbx_error e;
	struct args a;

	sbx_diag_program("sbx-snap");
	if (argc < 2)
		sbx_cli_usage_error("sbx-snap", "a command is required: commit, diff, restore, versions, fork, log or gc");
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage(stdout);
		return SBX_EXIT_OK;
	}
	if (!strcmp(cmd, "--version")) {
		sbx_cli_print_version("sbx-snap");
		return SBX_EXIT_OK;
	}
	parse(argc, argv, &a);
	check_options(&a, cmd);
	if (!strcmp(cmd, "commit")) {
		need(&a, 1, "commit takes one WORKSPACE");
		return emit(sbx_snap_commit(a.pos[0], a.store, a.ref, a.max_manifest, &e), &e);
	}
	if (!strcmp(cmd, "diff")) {
		need(&a, 2, "diff takes two snapshots (digests or ref names; versions with a workspace)");
		return emit(snap_diff(&a, a.pos[0], a.pos[1], &e), &e);
	}
	if (!strcmp(cmd, "restore"))
		return restore(&a, &e);
	if (!strcmp(cmd, "versions")) {
		need(&a, 0, "versions takes no arguments, only options");
		return emit(snap_versions(&a, &e), &e);
	}
	if (!strcmp(cmd, "fork")) {
		if (a.npos > 1)
			sbx_cli_usage_error("sbx-snap", "fork takes at most one VERSION (default: live)");
		return emit(snap_fork(&a, a.npos ? a.pos[0] : "live", &e), &e);
	}
	if (!strcmp(cmd, "log"))
		return log_of(&a, &e);
	if (!strcmp(cmd, "gc")) {
		need(&a, 0, "gc takes no arguments, only options");
		return emit(sbx_snap_gc(a.store, &a.gc, &e), &e);
	}
	sbx_cli_usage_error("sbx-snap", "unknown command; use commit, diff, restore, versions, fork, log or gc");
}
