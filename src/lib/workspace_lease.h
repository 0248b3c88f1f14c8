/* workspace_lease.h — one writer per physical workspace across processes: an
 * flock on <state>/locks/ws-<dev>-<ino>.lock, whatever path spelling or
 * symlink names the workspace. The kernel drops it when the holder dies. */
#ifndef SBX_WORKSPACE_LEASE_H
#define SBX_WORKSPACE_LEASE_H

#include "error.h"

#include <stdbool.h>

/* Takes the lease on the workspace held by wsfd (its device and inode). *queued is set when another
 * holder had it and this call waited (on_wait runs once, before waiting).
 * A signal that interrupts the wait and makes cancelled() true ends it:
 * -1 with the error code "cancelled". */
int sbx_lease_take(const char *state_dir, int wsfd, void (*on_wait)(void *), void *arg,
		   bool (*cancelled)(void), bool *queued, struct sbx_error *e);

/* The same, waiting at most wait_ms (SIGALRM interrupts the flock; the
 * process's SIGALRM handler is replaced): -1 with the error code "busy"
 * once that has passed. */
int sbx_lease_take_within(const char *state_dir, int wsfd, unsigned wait_ms, struct sbx_error *e);

#endif
