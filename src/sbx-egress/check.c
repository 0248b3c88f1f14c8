/* check.c — `sbx-egress check`: the gateway's decision for one target, as
 * JSON, without connecting anywhere. */
#include "egress.h"
#include "../lib/cli.h"
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
		"Usage: sbx-egress check --policy FILE|- [--resolve NAME:PORT:ADDR[,ADDR]...]... HOST[:PORT]\n"
		"\n"
		"Prints the gateway's decision for HOST[:PORT] (default port 443) as JSON:\n"
		"allowlist, then resolution (--resolve answers instead of DNS), then every\n"
		"address classified. Connects nowhere. See sbx-egress(1).\n");
	sbx_cli_print_exit_codes(out);
}

int check_main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "policy", required_argument, NULL, 'p' }, { "resolve", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	static struct overrides o;
	const char *policy_path = NULL;
	struct sbx_error e;
	int c;

	opterr = 0;
	optind = 2;
	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		if (c == 'p')
			policy_path = optarg;
		else if (c == 'r')
			overrides_add(&o, optarg);
		else if (c == 'h')
			usage(stdout), exit(SBX_EXIT_OK);
		else
			sbx_cli_bad_option("sbx-egress", argv[optind - 1]);
	}
	if (!policy_path || optind != argc - 1)
		sbx_cli_usage_error("sbx-egress", "check needs --policy FILE and one HOST[:PORT]");

	struct sbx_egress_policy policy;
	json_t *doc = sbx_json_load(policy_path, 1u << 20, &e);
	if (!doc || sbx_egress_policy_parse(doc, &policy, &e) != 0)
		sbx_die(&e);
	json_decref(doc);

	struct sbx_egress_target t;
	char why[300];
	int status = sbx_egress_parse_authority(argv[optind], 443, &t, why, sizeof(why));
	json_t *out;
	int rc;
	if (status) {
		out = json_pack("{s:b,s:i,s:o,s:s,s:s}", "allowed", 0, "status", status,
				"target", sbx_json_string_lossy(argv[optind]), "reason", why, "revision", policy.revision);
		rc = status == 400 ? SBX_EXIT_USAGE : SBX_EXIT_POLICY;
	} else {
		struct sbx_egress_decision d;
		sbx_egress_decide(&policy, &t, overrides_resolve, &o, &d);
		json_t *addrs = json_array();
		for (int i = 0; i < d.n_vetted; i++) {
			char text[64];
			sbx_egress_addr_text(&d.vetted[i], text, sizeof(text));
			json_array_append_new(addrs, json_string(text));
		}
		out = json_pack("{s:b,s:i,s:s,s:i,s:s,s:o,s:s}", "allowed", d.allowed, "status", d.allowed ? 200 : 403,
				"host", t.host, "port", t.port, "reason", d.reason, "addresses", addrs,
				"revision", policy.revision);
		rc = d.allowed ? SBX_EXIT_OK : SBX_EXIT_POLICY;
	}
	sbx_json_print(stdout, out);
	json_decref(out);
	sbx_egress_policy_free(&policy);
	return rc;
}
