/* sbx-probe — what this host's bubblewrap can do, as one JSON object on
 * stdout. Exit 0 when it can sandbox, 4 when it cannot (JSON either way). */
#include "../lib/cli.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "../lib/probe.h"
#include "../lib/probe_cache.h"
#include "../lib/run_as.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-probe [--bwrap PATH] [--cache-dir DIR | --no-cache] [--refresh]\n"
		"                 [--timeout-ms N] [--run-as USER|UID[:GID]]\n"
		"\n"
		"Probes what this host's bubblewrap can do (fresh /proc or the bind fallback,\n"
		"--disable-userns, seccomp) and prints one JSON object. See sbx-probe(1).\n"
		"\n"
		"  --bwrap PATH      bwrap to probe (default: $SBX_BWRAP, $SCIENCE_AGENT_BWRAP_PATH,\n"
		"                    else bwrap on PATH)\n"
		"  --cache-dir DIR   where answers are cached (default: <data dir>/cache)\n"
		"  --no-cache        neither read nor write the cache\n"
		"  --refresh         probe again even when a cached answer is fresh\n"
		"  --timeout-ms N    deadline of each probe sandbox (default %d)\n"
		"  --run-as USER     as root: probe as this unprivileged uid, the answer every\n"
		"                    sandbox started by root gets (sbx-launch's --run-as)\n"
		"  --help, --version\n",
		SBX_PROBE_TIMEOUT_MS);
	sbx_cli_print_exit_codes(out);
}

static void report_warnings(const json_t *answer)
{
	size_t i;
	json_t *w;

	json_array_foreach(json_object_get(answer, "warnings"), i, w)
		sbx_diag("warning", sbx_json_string_or(w, "code", "warning"),
			 sbx_json_string_or(w, "remedy", NULL), "%s",
			 sbx_json_string_or(w, "message", ""));
}

int main(int argc, char **argv)
{
	enum { OPT_BWRAP = 256, OPT_CACHE_DIR, OPT_NO_CACHE, OPT_REFRESH, OPT_TIMEOUT, OPT_RUN_AS, OPT_VERSION };
	static const struct option options[] = {
		{ "bwrap", required_argument, NULL, OPT_BWRAP },
		{ "cache-dir", required_argument, NULL, OPT_CACHE_DIR },
		{ "no-cache", no_argument, NULL, OPT_NO_CACHE },
		{ "refresh", no_argument, NULL, OPT_REFRESH },
		{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT },
		{ "run-as", required_argument, NULL, OPT_RUN_AS },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	struct sbx_probe_request req = { 0 };
	struct sbx_run_as who;
	struct sbx_error e;
	const char *run_as = NULL;
	bool no_cache = false;
	int c;

	sbx_diag_program("sbx-probe");
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case OPT_BWRAP: req.bwrap = optarg; break;
		case OPT_CACHE_DIR: req.cache_dir = optarg; break;
		case OPT_NO_CACHE: no_cache = true; break;
		case OPT_REFRESH: req.refresh = true; break;
		case OPT_TIMEOUT:
			req.timeout_ms = (int)sbx_cli_parse_long("--timeout-ms", optarg, 1, INT_MAX);
			break;
		case OPT_RUN_AS: run_as = optarg; break;
		case 'h': usage(stdout); return SBX_EXIT_OK;
		case OPT_VERSION: sbx_cli_print_version("sbx-probe"); return SBX_EXIT_OK;
		default: sbx_cli_bad_option("sbx-probe", argv[optind - 1]);
		}
	}
	if (optind < argc)
		sbx_cli_usage_error("sbx-probe", "unexpected argument; sbx-probe takes options only");
	if (no_cache && req.cache_dir)
		sbx_cli_usage_error("sbx-probe", "--no-cache and --cache-dir exclude each other");
	if (no_cache)
		req.cache_dir = "";
	if (req.cache_dir && *req.cache_dir == '\0' && !no_cache)
		sbx_cli_usage_error("sbx-probe", "--cache-dir: must not be empty");
	if (req.bwrap && !*req.bwrap)
		sbx_cli_usage_error("sbx-probe", "--bwrap: must not be empty");

	if (run_as) {
		if (sbx_run_as_resolve(run_as, &who, &e) != 0)
			sbx_die(&e);
		req.as = &who;
	}
	json_t *answer = sbx_probe(&req);
	report_warnings(answer);
	if (sbx_json_print(stdout, answer) != 0) {
		sbx_diag("error", "write-failed", NULL, "cannot write the answer to stdout");
		json_decref(answer);
		return SBX_EXIT_INTERNAL;
	}
	int rc = sbx_json_bool_or(answer, "usable", false) ? SBX_EXIT_OK : SBX_EXIT_NO_SANDBOX;
	json_decref(answer);
	return rc;
}
