/* sbx-snap — content-addressed workspace snapshots: commit, diff, restore,
 * log, gc. Every command prints one JSON object (log: one per line). */
#include "../lib/cli.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "restore.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-snap commit WORKSPACE --store DIR [--ref NAME] [--max-manifest-bytes N]\n"
		"       sbx-snap diff A B --store DIR          (A, B: digests or ref names)\n"
		"       sbx-snap restore DIGEST DIR --store DIR\n"
		"       sbx-snap log --ref NAME --store DIR\n"
		"       sbx-snap gc --store DIR [--keep N] [--min-age-s S] [--lock-fd FD]\n"
		"\n"
		"commit prints the receipt {digest, size, files, bytes, mediaType, pool,\n"
		"hashedFiles, manifestStored[, ref]}; a manifest over --max-manifest-bytes\n"
		"(default 64 MiB) is refused (exit 6). gc keeps the last --keep versions of\n"
		"every ref (default 20; 0: all) and removes what nothing kept reaches, once\n"
		"older than --min-age-s (default 60); --lock-fd: <store>/gc.lock, flocked.\n"
		"See sbx-snap(1).\n");
	sbx_cli_print_exit_codes(out);
}

struct args {
	const char *store, *ref;
	char *pos[3];
	int npos;
	uint64_t max_manifest;
	struct sbx_snap_gc_opts gc;
	bool gc_options;
};

static void parse(int argc, char **argv, struct args *a)
{
	static const struct option options[] = {
		{ "store", required_argument, NULL, 's' },
		{ "ref", required_argument, NULL, 'r' },
		{ "max-manifest-bytes", required_argument, NULL, 'm' },
		{ "keep", required_argument, NULL, 'k' },
		{ "min-age-s", required_argument, NULL, 'a' },
		{ "lock-fd", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof(*a));
	a->max_manifest = SBX_SNAP_MANIFEST_MAX_DEFAULT;
	a->gc = (struct sbx_snap_gc_opts){ SBX_SNAP_KEEP_DEFAULT, SBX_SNAP_MIN_AGE_DEFAULT, -1 };
	opterr = 0;
	optind = 2;
	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		if (c == 's')
			a->store = optarg;
		else if (c == 'r')
			a->ref = optarg;
		else if (c == 'm')
			a->max_manifest = (uint64_t)sbx_cli_parse_long("--max-manifest-bytes", optarg, 1024,
								       (long)SBX_SNAP_MANIFEST_READ_MAX);
		else if (c == 'k')
			a->gc.keep = (unsigned)sbx_cli_parse_long("--keep", optarg, 0, 100000), a->gc_options = true;
		else if (c == 'a')
			a->gc.min_age_s = (unsigned)sbx_cli_parse_long("--min-age-s", optarg, 0, 86400 * 365), a->gc_options = true;
		else if (c == 'l')
			a->gc.lock_fd = (int)sbx_cli_parse_long("--lock-fd", optarg, 3, 65535), a->gc_options = true;
		else
			sbx_cli_bad_option("sbx-snap", argv[optind - 1]);
	}
	for (; optind < argc; optind++) {
		if (a->npos == 3)
			sbx_cli_usage_error("sbx-snap", "too many arguments");
		a->pos[a->npos++] = argv[optind];
	}
	if (!a->store || !*a->store)
		sbx_cli_usage_error("sbx-snap", "--store DIR is required");
}

static void need(const struct args *a, int n, const char *what)
{
	if (a->npos != n)
		sbx_cli_usage_error("sbx-snap", what);
}

static int emit(json_t *v, struct sbx_error *e)
{
	if (!v)
		sbx_die(e);
	return sbx_json_answer(v);
}

int main(int argc, char **argv)
{
	struct sbx_error e;
	struct args a;

	sbx_diag_program("sbx-snap");
	if (argc < 2)
		sbx_cli_usage_error("sbx-snap", "a command is required: commit, diff, restore, log or gc");
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
	if (a.gc_options && strcmp(cmd, "gc") != 0)
		sbx_cli_usage_error("sbx-snap", "--keep, --min-age-s and --lock-fd are gc's options");
	if (!strcmp(cmd, "commit")) {
		need(&a, 1, "commit takes one WORKSPACE");
		return emit(sbx_snap_commit(a.pos[0], a.store, a.ref, a.max_manifest, &e), &e);
	}
	if (!strcmp(cmd, "diff")) {
		need(&a, 2, "diff takes two snapshots (digests or ref names)");
		return emit(sbx_snap_diff(a.store, a.pos[0], a.pos[1], &e), &e);
	}
	if (!strcmp(cmd, "restore")) {
		need(&a, 2, "restore takes DIGEST DIR");
		char digest[72];
		if (sbx_snap_resolve(a.store, a.pos[0], digest, &e) != 0 ||
		    sbx_snap_restore(a.store, digest, a.pos[1], &e) != 0)
			sbx_die(&e);
		return emit(json_pack("{s:s,s:s}", "digest", digest, "restoredTo", a.pos[1]), &e);
	}
	if (!strcmp(cmd, "log")) {
		need(&a, 0, "log takes --ref NAME only");
		if (!a.ref)
			sbx_cli_usage_error("sbx-snap", "log needs --ref NAME");
		json_t *log = sbx_snap_log(a.store, a.ref, &e);
		if (!log)
			sbx_die(&e);
		size_t i;
		json_t *row;
		json_array_foreach(log, i, row)
			sbx_json_print(stdout, row);
		json_decref(log);
		return SBX_EXIT_OK;
	}
	if (!strcmp(cmd, "gc")) {
		need(&a, 0, "gc takes no arguments, only options");
		return emit(sbx_snap_gc(a.store, &a.gc, &e), &e);
	}
	sbx_cli_usage_error("sbx-snap", "unknown command; use commit, diff, restore, log or gc");
}
