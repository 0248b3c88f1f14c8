/* snapshot_upkeep.c — the run's part in the snapshot store: its options, the commit
 * of the workspace, and the upkeep after the run: the run's pins go, then a
 * collection that is due starts detached (its own session, lowest CPU and
 * idle I/O priority, an empty environment) holding <store>/gc.lock: never
 * waited for, at most one per store, at most one per interval. */
#include "run.h"
#include "../lib/program_path.h"
#include "../lib/snap_history.h"
#include "../lib/cli.h"
#include "../lib/exitcodes.h"
#include "../lib/spawn.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>


void run_store_defaults(struct run *r)
{
	sbx_snap_pin_init(&r->pin);
	r->max_manifest = SBX_SNAP_MANIFEST_MAX_DEFAULT;
	r->keep_versions = SBX_SNAP_KEEP_DEFAULT;
	r->gc_interval_s = SBX_SNAP_GC_INTERVAL_DEFAULT;
}

void run_store_option(struct run *r, int c, const char *arg)
{
	if (c == 'M')
		r->max_manifest = (uint64_t)sbx_cli_parse_long("--max-manifest-bytes", arg, 1024,
							       (long)SBX_SNAP_MANIFEST_READ_MAX);
	else if (c == 'N')
		r->keep_versions = (unsigned)sbx_cli_parse_long("--keep-versions", arg, 0, 100000);
	else if (c == 'G')
		r->gc_interval_s = sbx_cli_parse_long("--gc-interval-s", arg, 0, 86400 * 365);
	else if (c == 'Z')
		r->gc_interval_s = -1;
}

json_t *run_commit_snapshot(struct run *r, struct sbx_error *e)
{
	char ref[SBX_SNAP_WS_REF_MAX];
	if (sbx_snap_workspace_ref(r->req.ws.fd, ref, e) != 0)
		return NULL;
	return sbx_snap_commit_scanned(r->req.ws.fd, r->store, ref, &r->after, r->max_manifest, e);
}

void run_collect_store(struct run *r)
{
	sbx_snap_pin_close(&r->pin);
	if (!r->store[0] || r->gc_interval_s < 0)
		return;
	char snap[PATH_MAX], keep[16], err[PATH_MAX + 16];
	if (sbx_sibling_program("sbx-snap", snap, sizeof(snap)) != 0)
		return;
	int lock = sbx_snap_gc_claim(r->store, (unsigned)r->gc_interval_s);
	if (lock < 0)
		return; /* not due, or one runs */
	snprintf(keep, sizeof(keep), "%u", r->keep_versions);
	snprintf(err, sizeof(err), "%s/gc.err", r->store);
	const char *argv[] = { snap, "gc", "--store", r->store, "--keep", keep, "--lock-fd", "3", NULL };
	char *const envp[] = { NULL };
	/* Niced, idle I/O; it reads and removes the store's files, which it owns. */
	(void)run_detach(argv, envp, err, lock, true);
	close(lock);
}
