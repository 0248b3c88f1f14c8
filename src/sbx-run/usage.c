/* usage.c — sbx-run --help: every mode and option, then the exit codes. */
#include "run.h"
#include "../lib/cli.h"

#include <stdio.h>

void run_usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-run [--state-dir DIR] [--snapshot-store DIR | --no-snapshot] [--grace-ms N] [REQUEST|-]\n"
		"       sbx-run cancel EXECUTION-DIR\n"
		"       sbx-run sweep [--older-than SECONDS] [--max N] STATE-DIR\n"
		"\n"
		"Runs one execution request (JSON, see sbx-formats(5)) and prints events as JSON lines:\n"
		"queued, started, finished (with the result, also in <state>/<id>/result.json).\n"
		"\n"
		"  --state-dir DIR       executions and leases (default: <data dir>/executions)\n"
		"  --snapshot-store DIR  where workspace snapshots go (default: <state dir>/snapshots)\n"
		"  --no-snapshot         skip the snapshot\n"
		"  --max-manifest-bytes N  a snapshot manifest larger than N bytes is refused: the run\n"
		"                        ends resource-exhausted (default 67108864)\n"
		"  --keep-versions N     the collection keeps the last N snapshots of each ref (default 20;\n"
		"                        0: all)\n"
		"  --gc-interval-s S     after a run, collect the store in the background when the last\n"
		"                        collection is S seconds old (default 600; 0: after every run)\n"
		"  --no-gc               never start a collection\n"
		"  --output-by-reference the result names stdout and stderr (streams.*.path, bytes,\n"
		"                        sha256) instead of carrying their text\n"
		"  --transient           the caller reads the finished event and removes the execution\n"
		"                        directory: neither result.json nor launch-spec.json is written\n"
		"  --standby             start before the request: narrow, make the cgroups and fork the\n"
		"                        sandbox's first process, then read the request from the Unix\n"
		"                        socket on stdin (its directories as SCM_RIGHTS, placed at fds\n"
		"                        3-6, which must be open placeholders); EOF with none: exit 0\n"
		"  --grace-ms N          between SIGTERM and SIGKILL on timeout or cancel (default 5000)\n"
		"  --bootstrap URL       job mode: fetch the run document from URL (or MAPI_BOOTSTRAP_URL),\n"
		"                        delete it, run it, upload outputs, media and a signed manifest\n"
		"                        (MAPI_RUN_ID and MAPI_NONCE must name the run; see JOB MODE)\n"
		"  --keep-scratch        job mode: keep the execution directory and scratch at exit\n"
		"  --platform-deadline-ms N, --deadline-ms N  the platform ends this job N ms after sbx-run starts\n"
		"                        (a job's wall clock; timeoutMs stays exact)\n"
		"  --deadline-reserve-ms N  SIGTERM this long before the platform deadline\n"
		"                        (default 15000, at most half of it)\n"
		"  --signing-key-fd FD   sign every event line with the key read from FD\n"
		"  --signing-key-file F  the same from a file only its owner can read (mode 0600)\n"
		"  --egress-dir DIR      egress gateways by policy revision (default: <data dir>/eg)\n"
		"  --egress-idle-s N     a gateway no run holds exits after N idle seconds (default 300)\n"
		"  --egress-resolve NAME:PORT:ADDR  a gateway this run starts answers NAME so (repeatable)\n"
		"  --egress-upstream-ca FILE  a secret run's gateway also trusts this CA for the secrets' hosts\n"
		"  --secrets-dir DIR   the sbx-secrets store of secretRefs (default <data dir>/secrets)\n"
		"\n"
		"       sbx-run verify --key-file KEY [EVENTS|-]   checks a signed event stream\n");
	sbx_cli_print_exit_codes(out);
}
