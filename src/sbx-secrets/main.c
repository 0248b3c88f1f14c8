/* sbx-secrets — the secret store (issue #31): put, rotate, rm, ls, and the
 * check a run makes of the secrets it names against its network policy.
 * A value comes on stdin only and never leaves but to sbx-egress. */
#include "secrets.h"
#include "../lib/cli.h"
#include "../lib/datadir.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-secrets [--store DIR | --data-dir DIR] COMMAND ...\n"
		"  put NAME --host H [--host H]... (--header 'NAME: FORMAT' | --basic USER) --env VAR [--replace]\n"
		"                   the value on stdin (one trailing newline dropped), never in argv\n"
		"  put [NAME] --json [--replace]   the whole secret as JSON on stdin\n"
		"  rotate NAME [--json]            a new value on stdin (or {\"value\"})\n"
		"  rm NAME | ls\n"
		"  check --policy FILE|-|none [--touch] NAME...\n"
		"\n"
		"The secret store, default <data dir>/secrets. Prints JSON, never a value. See sbx-secrets(1).\n"
		"\n"
		"  --store DIR      the store directory (0700, yours)\n"
		"  --data-dir DIR   the data directory whose secrets/ is the store\n"
		"  --host H         put: a host the secret may be sent to (name, *.name, :port), 1 to 16\n"
		"  --header 'N: F'  put: sent as header N, F with {} where the value goes\n"
		"  --basic USER     put: sent as HTTP basic authorization for USER\n"
		"  --env VAR        put: the variable the sandbox sees the placeholder in\n"
		"  --replace        put: replace a secret of that name (its createdAt kept)\n"
		"  --json           put, rotate: read JSON from stdin\n"
		"  --policy FILE    check: the sbx-egress policy JSON (- for stdin), or none\n"
		"  --touch          check: set each secret's lastUsedAt\n"
		"  --help, --version\n");
	sbx_cli_print_exit_codes(out);
}

static const char *one_name(const char *cmd, char **rest, int n)
{
	char message[128];
	if (n != 1) {
		snprintf(message, sizeof(message), "%s takes one NAME", cmd);
		sbx_cli_usage_error("sbx-secrets", message);
	}
	if (!sbx_secret_name_ok(rest[0])) {
		struct sbx_error e;
		sbx_error_set(&e, SBX_EXIT_USAGE, "bad-name", "NAME: must match ^[a-z0-9][a-z0-9_-]{0,62}$, not %.80s", rest[0]);
		sbx_die(&e);
	}
	return rest[0];
}

/* ls: every secret's metadata, by name. */
static int list(const char *store)
{
	struct sbx_error e;
	char **names;
	json_t *out = json_array();
	int dir = store_dir(store, false);
	int n = dir == SBX_SECRET_NO_STORE ? 0 : sbx_secret_list(dir, &names, &e);
	if (n < 0)
		sbx_die(&e);
	for (int i = 0; i < n; i++) {
		struct sbx_secret s;
		if (sbx_secret_load(dir, names[i], false, &s, &e) != 0)
			sbx_die(&e);
		json_array_append_new(out, sbx_secret_meta(&s));
	}
	if (dir != SBX_SECRET_NO_STORE)
		sbx_secret_names_free(names, n);
	return sbx_json_answer(json_pack("{s:o}", "secrets", out));
}

/* A usage error for an option cmd does not take. */
static void only_its_options(const char *cmd, const struct options *o)
{
	bool put = !strcmp(cmd, "put"), check = !strcmp(cmd, "check");
	const char *stray = NULL;
	if (!put && (o->n_hosts || o->header || o->basic || o->env || o->replace))
		stray = "--host, --header, --basic, --env and --replace go with put only";
	else if (put && o->json && (o->n_hosts || o->header || o->basic || o->env))
		stray = "put --json reads the whole secret from stdin: no --host, --header, --basic or --env";
	else if (o->json && !put && strcmp(cmd, "rotate") != 0)
		stray = "--json goes with put and rotate only";
	else if (!check && (o->policy || o->touch))
		stray = "--policy and --touch go with check only";
	if (stray)
		sbx_cli_usage_error("sbx-secrets", stray);
}

int main(int argc, char **argv)
{
	enum { OPT_STORE = 256, OPT_DATA, OPT_HOST, OPT_HEADER, OPT_BASIC, OPT_ENV, OPT_REPLACE, OPT_JSON, OPT_POLICY, OPT_TOUCH };
	static const struct option options[] = {
		{ "store", required_argument, NULL, OPT_STORE },   { "data-dir", required_argument, NULL, OPT_DATA },
		{ "host", required_argument, NULL, OPT_HOST },     { "header", required_argument, NULL, OPT_HEADER },
		{ "basic", required_argument, NULL, OPT_BASIC },   { "env", required_argument, NULL, OPT_ENV },
		{ "replace", no_argument, NULL, OPT_REPLACE },     { "json", no_argument, NULL, OPT_JSON },
		{ "policy", required_argument, NULL, OPT_POLICY }, { "touch", no_argument, NULL, OPT_TOUCH },
		{ "help", no_argument, NULL, 'h' },                { "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct options o = { 0 };
	char data[PATH_MAX], store[PATH_MAX];
	const char *data_arg = NULL;
	int opt;
	sbx_diag_program("sbx-secrets");
	sbx_secret_json_cleansing();
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case OPT_STORE: o.store = optarg; break;
		case OPT_DATA: data_arg = optarg; break;
		case OPT_HOST:
			if (o.n_hosts == SBX_SECRET_MAX_HOSTS)
				sbx_cli_usage_error("sbx-secrets", "--host: at most 16");
			o.hosts[o.n_hosts++] = optarg;
			break;
		case OPT_HEADER: o.header = optarg; break;
		case OPT_BASIC: o.basic = optarg; break;
		case OPT_ENV: o.env = optarg; break;
		case OPT_REPLACE: o.replace = true; break;
		case OPT_JSON: o.json = true; break;
		case OPT_POLICY: o.policy = optarg; break;
		case OPT_TOUCH: o.touch = true; break;
		case 'h': usage(stdout); return SBX_EXIT_OK;
		case 'V': sbx_cli_print_version("sbx-secrets"); return SBX_EXIT_OK;
		default: sbx_cli_bad_option("sbx-secrets", argv[optind - 1]);
		}
	}
	if (o.store && data_arg)
		sbx_cli_usage_error("sbx-secrets", "give --store or --data-dir, not both");
	if (!o.store) {
		if (data_arg ? snprintf(data, sizeof(data), "%s", data_arg) >= (int)sizeof(data) : sbx_data_dir(data, sizeof(data)) != 0)
			sbx_cli_usage_error("sbx-secrets", "the data directory path is too long");
		if (sbx_data_path(data, SBX_DATA_SECRETS, NULL, store, sizeof(store)) != 0)
			sbx_cli_usage_error("sbx-secrets", "the data directory path is too long");
		o.store = store;
	}
	const char *cmd = optind < argc ? argv[optind++] : NULL;
	char **rest = argv + optind;
	int n = argc - optind;
	if (!cmd)
		sbx_cli_usage_error("sbx-secrets", "expected a command (see --help)");
	only_its_options(cmd, &o);
	if (!strcmp(cmd, "put")) {
		if (!o.json || n)
			return cmd_put(o.store, one_name(cmd, rest, n), &o);
		return cmd_put(o.store, NULL, &o);
	}
	if (!strcmp(cmd, "rotate")) {
		return cmd_rotate(o.store, one_name(cmd, rest, n), &o);
	}
	if (!strcmp(cmd, "rm")) {
		return cmd_rm(o.store, one_name(cmd, rest, n));
	}
	if (!strcmp(cmd, "ls")) {
		if (n)
			sbx_cli_usage_error("sbx-secrets", "ls takes no arguments");
		return list(o.store);
	}
	if (!strcmp(cmd, "check")) {
		if (!o.policy)
			sbx_cli_usage_error("sbx-secrets", "check needs --policy FILE|-|none");
		return cmd_check(o.store, rest, n, &o);
	}
	sbx_cli_usage_error("sbx-secrets", "unknown command (see --help)");
}
