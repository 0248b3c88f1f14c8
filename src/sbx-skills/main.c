/* sbx-skills — the skill-package store (runner-api 4 rows 30-31, 5.7):
 * put a bundle, get or verify a held package, list them. A package is
 * hashed once; later checks trust its stamp while nothing in it changed. */
#include "skills.h"
#include "../lib/beneath.h"
#include "../lib/cli.h"
#include "../lib/datadir.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/json.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-skills [OPTIONS] put [BUNDLE|-] | get ID | verify [--fd N] ID | ls\n"
		"\n"
		"The skill-package store, <data dir>/skill-packages. Prints JSON. See sbx-skills(1).\n"
		"\n"
		"  --data-dir DIR   (default: the sbx data dir)\n"
		"  --fd N           verify: the package is the directory open on fd N (it must be\n"
		"                   the held one); the caller mounts that very fd\n"
		"  --help, --version\n");
	sbx_cli_print_exit_codes(out);
}


static struct store store = { .fd = -1 };

static void release(void)
{
	store_close(&store);
}

static const char *root_of(const char *id, char *out, size_t size)
{
	snprintf(out, size, "%s/%s", store.dir, id);
	return out;
}

static int put(const char *from, const char *data)
{
	struct sbx_error e;
	char id[SBX_SHA256_HEX_LEN + 1], root[PATH_MAX + 80];
	size_t len;
	json_t *doc;
	enum verified how;
	char *text = sbx_read_file_capped(from, SKILLS_BUNDLE_CAP, &len, &e);
	if (!text)
		sbx_die(&e);
	int rc = bundle_check(text, len, &doc, id, &e);
	free(text);
	/* Checked whole before the store is touched: bad input leaves nothing. */
	if (rc != 0)
		sbx_die(&e);
	if (store_open(&store, data, true, &e) != 0)
		sbx_die(&e);
	store_sweep_incoming(&store);
	int held = store_package_open(&store, id);
	rc = held >= 0 ? stamp_verify(&store, id, held, &how, &e) : -1;
	if (held >= 0)
		close(held);
	if (rc != 0 && publish(&store, json_object_get(doc, "skills"), id, &e) != 0)
		sbx_die(&e);
	json_decref(doc);
	if (rc != 0) {
		/* Hashed once, as it now lies on disk, and stamped. */
		held = store_package_open(&store, id);
		if (held < 0 || stamp_verify(&store, id, held, &how, &e) != 0) {
			if (held < 0)
				sbx_error_set(&e, SBX_EXIT_INTERNAL, "store", "Cannot store the skill package: %s", strerror(errno));
			sbx_die(&e);
		}
		close(held);
	}
	return sbx_json_answer(json_pack("{s:s,s:s}", "id", id, "root", root_of(id, root, sizeof(root))));
}

/* The held package id (or the directory on fd, which must be it),
 * verified; 0 with how, or exits: not-held (2) or integrity (9). */
static void verify(const char *id, int fd, enum verified *how)
{
	struct sbx_error e;
	int pkg = store_package_open(&store, id);
	if (pkg >= 0 && fd >= 0) {
		bool same = sbx_same_file(pkg, fd);
		close(pkg);
		pkg = same ? fd : (errno = 0, -1);
	}
	if (pkg < 0) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "not-held", "skill package %s is not held by this store%s", id,
			      errno == ELOOP ? " (a symbolic link stands in its place)" : "");
		sbx_die(&e);
	}
	if (stamp_verify(&store, id, pkg, how, &e) != 0)
		sbx_die(&e);
}

int main(int argc, char **argv)
{
	enum { OPT_DATA = 256, OPT_FD };
	static const struct option options[] = {
		{ "data-dir", required_argument, NULL, OPT_DATA }, { "fd", required_argument, NULL, OPT_FD },
		{ "help", no_argument, NULL, 'h' }, { "version", no_argument, NULL, 'V' }, { NULL, 0, NULL, 0 },
	};
	char data[PATH_MAX], root[PATH_MAX + 80];
	struct sbx_error e;
	int opt, fd = -1;
	sbx_diag_program("sbx-skills");
	atexit(release);
	if (sbx_data_dir(data, sizeof(data)) != 0)
		sbx_cli_usage_error("sbx-skills", "the data directory path is too long");
	while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
		switch (opt) {
		case OPT_DATA:
			if (strlen(optarg) >= sizeof(data) - 80 || !optarg[0])
				sbx_cli_usage_error("sbx-skills", "--data-dir: empty or too long");
			strcpy(data, optarg);
			break;
		case OPT_FD: fd = (int)sbx_cli_parse_long("--fd", optarg, 3, 1 << 20); break;
		case 'h': usage(stdout); return SBX_EXIT_OK;
		case 'V': sbx_cli_print_version("sbx-skills"); return SBX_EXIT_OK;
		default: sbx_cli_bad_option("sbx-skills", argv[optind - 1]);
		}
	}
	/* Options may come after the command too (verify --fd 3 ID). */
	const char *cmd = optind < argc ? argv[optind++] : NULL;
	while ((opt = getopt_long(argc, argv, "+", options, NULL)) != -1) {
		if (opt == OPT_FD)
			fd = (int)sbx_cli_parse_long("--fd", optarg, 3, 1 << 20);
		else
			sbx_cli_usage_error("sbx-skills", "options other than --fd go before the command");
	}
	char **rest = argv + optind;
	int n_rest = argc - optind;
	if (!cmd)
		sbx_cli_usage_error("sbx-skills", "expected a command (see --help)");
	if (!strcmp(cmd, "put")) {
		if (n_rest > 1)
			sbx_cli_usage_error("sbx-skills", "put takes one BUNDLE (or - for stdin)");
		return put(n_rest ? rest[0] : "-", data);
	}
	if (fd >= 0 && strcmp(cmd, "verify") != 0)
		sbx_cli_usage_error("sbx-skills", "--fd goes with verify only");
	if (store_open(&store, data, false, &e) != 0)
		sbx_die(&e);
	if (!strcmp(cmd, "ls")) {
		if (n_rest)
			sbx_cli_usage_error("sbx-skills", "ls takes no arguments");
		return sbx_json_answer(store_list(&store));
	}
	if (strcmp(cmd, "get") != 0 && strcmp(cmd, "verify") != 0)
		sbx_cli_usage_error("sbx-skills", "unknown command (see --help)");
	if (n_rest != 1)
		sbx_cli_usage_error("sbx-skills", "get and verify take one package ID");
	const char *id = rest[0];
	if (!store_id_ok(id)) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "bad-id", "ID: a package id is 64 lower-case hex digits, not %.80s", id);
		sbx_die(&e);
	}
	enum verified how;
	if (!strcmp(cmd, "verify")) {
		verify(id, fd, &how);
		return sbx_json_answer(json_pack("{s:s,s:s,s:s}", "id", id, "root", root_of(id, root, sizeof(root)), "verified",
				       how == VERIFIED_STAMP ? "stamp" : "hashed"));
	}
	/* get: held means held intact; a tampered copy reads as not held. */
	json_t *out = json_pack("{s:s}", "id", id);
	int pkg = store_package_open(&store, id);
	if (pkg >= 0 && stamp_verify(&store, id, pkg, &how, &e) == 0)
		json_object_set_new(out, "root", json_string(root_of(id, root, sizeof(root))));
	if (pkg >= 0)
		close(pkg);
	return sbx_json_answer(out);
}
