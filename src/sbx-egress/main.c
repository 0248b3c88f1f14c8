/* sbx-egress — domain-allowlisted egress. This build has `check`: the
 * gateway's decision for a target, as JSON, without connecting anywhere.
 * (The gateway and the in-sandbox bridge build on the same library.) */
#include "../lib/cli.h"
#include "../lib/diag.h"
#include "../lib/egress_policy.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OVERRIDES 64

struct override {
	char name[254];
	int port;
	struct sockaddr_storage addr;
};

struct overrides {
	struct override v[MAX_OVERRIDES];
	int n;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-egress check --policy FILE|- [--resolve NAME:PORT:ADDR]... HOST[:PORT]\n"
		"\n"
		"Prints the gateway's decision for HOST[:PORT] (default port 443) as JSON:\n"
		"allowlist, then resolution (--resolve answers instead of DNS), then every\n"
		"address classified. Connects nowhere. See sbx-egress(1).\n");
	sbx_cli_print_exit_codes(out);
}

/* NAME:PORT:ADDR, ADDR possibly a bracketed IPv6 address. */
static void add_override(struct overrides *o, char *spec)
{
	char *c1 = strchr(spec, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c1 || !c2 || o->n == MAX_OVERRIDES)
		sbx_cli_usage_error("sbx-egress", "--resolve: expected NAME:PORT:ADDR");
	*c1 = *c2 = '\0';
	struct override *x = &o->v[o->n];
	char *addr = c2 + 1;
	size_t n = strlen(addr);
	if (n > 2 && addr[0] == '[' && addr[n - 1] == ']') {
		addr[n - 1] = '\0';
		addr++;
	}
	memset(x, 0, sizeof(*x));
	snprintf(x->name, sizeof(x->name), "%s", spec);
	x->port = (int)sbx_cli_parse_long("--resolve PORT", c1 + 1, 1, 65535);
	struct sockaddr_in *s4 = (struct sockaddr_in *)&x->addr;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&x->addr;
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)x->port);
	} else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)x->port);
	} else {
		sbx_cli_usage_error("sbx-egress", "--resolve: ADDR must be an IPv4 or IPv6 address");
	}
	o->n++;
}

/* --resolve answers for host:port; DNS only when none is given for it. */
static int resolve(const char *host, int port, struct sockaddr_storage *out, int max, char *why, size_t size, void *arg)
{
	const struct overrides *o = arg;
	int n = 0;
	for (int i = 0; i < o->n && n < max; i++)
		if (!strcmp(o->v[i].name, host) && o->v[i].port == port)
			out[n++] = o->v[i].addr;
	return n ? n : sbx_egress_getaddrinfo(host, port, out, max, why, size, NULL);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "policy", required_argument, NULL, 'p' }, { "resolve", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' }, { "version", no_argument, NULL, 'V' }, { NULL, 0, NULL, 0 },
	};
	static struct overrides o;
	const char *policy_path = NULL;
	struct sbx_error e;
	int c;

	sbx_diag_program("sbx-egress");
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return SBX_EXIT_OK;
	}
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		sbx_cli_print_version("sbx-egress");
		return SBX_EXIT_OK;
	}
	if (argc < 2 || strcmp(argv[1], "check") != 0)
		sbx_cli_usage_error("sbx-egress", "this build has the command: check");
	opterr = 0;
	optind = 2;
	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		if (c == 'p')
			policy_path = optarg;
		else if (c == 'r')
			add_override(&o, optarg);
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
		sbx_egress_decide(&policy, &t, resolve, &o, &d);
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
