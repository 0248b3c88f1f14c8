/* commands.c — sbx-run's two small commands beside a run: `cancel DIR`
 * (SIGTERM to the supervisor recorded there) and `verify` (where a signed
 * event stream breaks). */
#include "run.h"
#include "../lib/cli.h"
#include "../lib/diag.h"
#include "../lib/event_sign.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "../lib/supervisor_record.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

/* `sbx-run cancel DIR`: SIGTERM to the supervisor recorded there, if it is
 * still that process (pid and start time both match). */
int run_cancel_command(const char *dir)
{
	struct sbx_error e;
	pid_t pid = 0;
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	bool ok = dfd >= 0 && sbx_supervisor_alive(dfd, ".", &pid) && kill(pid, SIGTERM) == 0;
	if (dfd >= 0)
		close(dfd);
	if (!ok) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "not-running", "%s: no running execution to cancel", dir);
		sbx_die(&e);
	}
	json_t *out = json_pack("{s:b,s:i}", "cancelRequested", 1, "supervisorPid", (int)pid);
	int rc = sbx_json_print(stdout, out) == 0 ? SBX_EXIT_OK : SBX_EXIT_INTERNAL;
	json_decref(out);
	return rc;
}

/* `sbx-run verify --key-file K [EVENTS|-]`: where a signed stream breaks. */
int run_verify_command(int argc, char **argv)
{
	struct sbx_signer key = { 0 };
	struct sbx_error e;
	const char *input = "-";

	if (argc < 3 || strcmp(argv[1], "--key-file") != 0 || argc > 4)
		sbx_cli_usage_error("sbx-run", "verify --key-file KEY [EVENTS|-]");
	if (sbx_signer_from_file(&key, argv[2], &e) != 0)
		sbx_die(&e);
	if (argc == 4)
		input = argv[3];
	FILE *in = strcmp(input, "-") ? fopen(input, "re") : stdin;
	if (!in) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "bad-path", "%s: %s", input, strerror(errno));
		sbx_die(&e);
	}
	json_t *verdict = sbx_verify_stream(in, key.key, key.key_len);
	if (in != stdin)
		fclose(in);
	OPENSSL_cleanse(key.key, sizeof(key.key));
	sbx_json_print(stdout, verdict);
	int rc = json_is_true(json_object_get(verdict, "ok")) ? SBX_EXIT_OK : SBX_EXIT_INTEGRITY;
	json_decref(verdict);
	return rc;
}
