/* sbx-egress — domain-allowlisted egress: `check` (a decision as JSON),
 * `gateway` (the allowlisting HTTP proxy on a Unix socket) and `bridge`
 * (the in-sandbox forwarder, a static sibling program). */
#include "egress.h"
#include "../lib/program_path.h"
#include "../lib/cli.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-egress check --policy FILE|- [--resolve NAME:PORT:ADDR[,ADDR]...]... HOST[:PORT]\n"
		"       sbx-egress gateway --socket PATH --policy FILE|- [options]\n"
		"       sbx-egress bridge --socket PATH --listen PORT -- ARGV...\n"
		"\n"
		"check prints the gateway's decision as JSON without connecting; gateway serves\n"
		"a domain allowlist as an HTTP proxy on a Unix socket; bridge runs ARGV with\n"
		"127.0.0.1:PORT and [::1]:PORT forwarded to the gateway. `sbx-egress COMMAND\n"
		"--help` for a command's options; sbx-egress(1) for everything.\n");
	sbx_cli_print_exit_codes(out);
}

/* The bridge is its own static program, so it needs nothing inside a sandbox. */
int bridge_exec(int argc, char **argv)
{
	char path[PATH_MAX];
	(void)argc;
	if (sbx_sibling_program("sbx-egress-bridge", path, sizeof(path)) != 0)
		sbx_cli_usage_error("sbx-egress", "bridge: sbx-egress-bridge is not installed next to sbx-egress");
	argv[1] = path;
	/* The same program by another name, in the caller's place (inside a
	 * sandbox, whose environment the launch built): it inherits as is. */
	execv(path, argv + 1);
	fprintf(stderr, "sbx-egress: bridge: %s: %s\n", path, strerror(errno));
	return SBX_EXIT_INTERNAL;
}

int main(int argc, char **argv)
{
	sbx_diag_program("sbx-egress");
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return SBX_EXIT_OK;
	}
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		sbx_cli_print_version("sbx-egress");
		return SBX_EXIT_OK;
	}
	if (argc > 1 && !strcmp(argv[1], "check"))
		return check_main(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "gateway"))
		return gateway_main(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "bridge"))
		return bridge_exec(argc, argv);
	sbx_cli_usage_error("sbx-egress", "expected a command: check, gateway or bridge");
}
