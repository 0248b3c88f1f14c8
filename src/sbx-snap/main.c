/* sbx-snap — content-addressed workspace snapshots: commit, diff, restore,
 * log, gc. Every command prints one JSON object (log: one per line). */
#include "../lib/cli.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "../lib/snap_store.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-snap commit WORKSPACE --store DIR [--ref NAME]\n"
		"       sbx-snap diff A B --store DIR          (A, B: digests or ref names)\n"
		"       sbx-snap restore DIGEST DIR --store DIR\n"
		"       sbx-snap log --ref NAME --store DIR\n"
		"       sbx-snap gc --store DIR\n"
		"\n"
		"commit prints the receipt {digest, size, files, bytes, mediaType, pool[, ref]}.\n"
		"See sbx-snap(1).\n");
	sbx_cli_print_exit_codes(out);
}

struct args {
	const char *store, *ref;
	char *pos[3];
	int npos;
};

static void parse(int argc, char **argv, struct args *a)
{
	static const struct option options[] = {
		{ "store", required_argument, NULL, 's' },
		{ "ref", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof(*a));
	opterr = 0;
	optind = 2;
	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		if (c == 's')
			a->store = optarg;
		else if (c == 'r')
			a->ref = optarg;
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
	int rc = sbx_json_print(stdout, v) == 0 ? SBX_EXIT_OK : SBX_EXIT_INTERNAL;
	json_decref(v);
	return rc;
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
	if (!strcmp(cmd, "commit")) {
		need(&a, 1, "commit takes one WORKSPACE");
		return emit(sbx_snap_commit(a.pos[0], a.store, a.ref, &e), &e);
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
		need(&a, 0, "gc takes --store DIR only");
		return emit(sbx_snap_gc(a.store, &e), &e);
	}
	sbx_cli_usage_error("sbx-snap", "unknown command; use commit, diff, restore, log or gc");
}
