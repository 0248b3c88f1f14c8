/* snap_history.h — a workspace's versions in the snapshot store: its ref
 * (ws-<dev>-<ino> of its directory, the name sbx-run commits under after
 * every run), the reflog lines written since that directory was made, and
 * a version a client names resolved against them. */
#ifndef SBX_SNAP_HISTORY_H
#define SBX_SNAP_HISTORY_H

#include "error.h"

#include <jansson.h>
#include <stddef.h>

#define SBX_SNAP_WS_REF_MAX 96

/* The workspace's ref name ("ws-<dev>-<ino>", decimal) into ref. 0, or -1
 * with e when wsfd cannot be stat'ed. */
int sbx_snap_workspace_ref(int wsfd, char ref[SBX_SNAP_WS_REF_MAX], struct sbx_error *e);

/* The workspace's versions, [{at, digest}] oldest first: the ref's reflog
 * lines stamped no earlier than the second the directory was born (statx
 * btime; where the filesystem keeps none, every line), so a directory
 * that got the inode of a removed one does not inherit its history. No
 * reflog yet: []. NULL with e only when wsfd cannot be stat'ed or the log
 * cannot be read. */
json_t *sbx_snap_history(const char *store, int wsfd, struct sbx_error *e);

/* A version as a client names it, resolved against history: "latest" (the
 * newest), a digest the history holds, or "latest~N" (N versions
 * before the newest). The digest into out; -1 with e (exit 2, code unknown-version)
 * otherwise: a digest the store holds for another workspace is never one
 * of this workspace's versions. */
int sbx_snap_history_resolve(const json_t *history, const char *version, char out[72], struct sbx_error *e);

/* A workspace about to be removed drops its ref and reflog, so no later
 * directory with its inode reads them (the store's collection then frees
 * what only they reached). 0, or -1 (nothing was there). */
int sbx_snap_history_drop(const char *store, int wsfd);

#endif
