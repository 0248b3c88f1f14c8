/* snap_store.h — a content-addressed snapshot store: file contents and tree
 * manifests as sha256-named objects, refs published atomically with a
 * reflog, and a stat cache so unchanged files are not hashed again.
 *
 *   <store>/objects/<2 hex>/<62 hex>   contents and manifests, written once
 *   <store>/refs/<name>                "sha256:<hex>\n"
 *   <store>/refs/<name>.log            one JSON line per update {at, digest}
 *   <store>/statcache/<key>.bin        per workspace: stat facts -> digest
 *   <store>/tmp/                       objects being written
 *   <store>/lock                       commits share it, gc takes it alone */
#ifndef SBX_SNAP_STORE_H
#define SBX_SNAP_STORE_H

#include "error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define SBX_SNAP_MEDIA_TYPE "application/vnd.sbx.tree.v1+json"
#define SBX_SNAP_POOL "agent-state"

/* Commits the workspace; ref may be NULL. Returns the receipt
 * {digest, size, files, bytes, mediaType, pool, hashedFiles[, ref]} or NULL;
 * hashedFiles counts the files the stat cache could not vouch for. */
json_t *sbx_snap_commit(const char *workspace, const char *store, const char *ref, struct sbx_error *e);
/* The same for a workspace held as a directory fd (O_PATH too). */
json_t *sbx_snap_commit_at(int wsfd, const char *store, const char *ref, struct sbx_error *e);
struct sbx_snap_scan;
/* The same with the caller's scan of that workspace taken just now (NULL:
 * scan it here); its file entries get their digests. */
json_t *sbx_snap_commit_scanned(int wsfd, const char *store, const char *ref, struct sbx_snap_scan *scan,
				struct sbx_error *e);

/* Copies an open file into the store as an object, hashed in the same
 * read; more than cap bytes (0: no cap) is an error (exit 6). */
int sbx_snap_store_fd(const char *store, int fd, uint64_t cap, char digest[72], uint64_t *size, struct sbx_error *e);

/* A digest ("sha256:<hex>") or a ref name, resolved to a digest. */
int sbx_snap_resolve(const char *store, const char *what, char digest[72], struct sbx_error *e);
/* The manifest of a digest, checked against its digest. */
json_t *sbx_snap_manifest(const char *store, const char *digest, struct sbx_error *e);
/* {created, modified, deleted}: files and symlinks by path. */
json_t *sbx_snap_diff(const char *store, const char *a, const char *b, struct sbx_error *e);
/* Recreates a snapshot in dir (absent or empty); contents are verified. */
int sbx_snap_restore(const char *store, const char *digest, const char *dir, struct sbx_error *e);
/* The reflog of a ref: [{at, digest}], oldest first. */
json_t *sbx_snap_log(const char *store, const char *ref, struct sbx_error *e);
/* Drops objects no ref or reflog reaches: {removed, kept, bytesFreed}. */
json_t *sbx_snap_gc(const char *store, struct sbx_error *e);

/* Shared helpers of the store's files. */
bool sbx_snap_valid_ref(const char *name);
bool sbx_snap_valid_digest(const char *digest);
int sbx_snap_object_path(const char *store, const char *digest, char *out, size_t size);
/* Opens <store>/lock and flocks it (exclusive for gc); -1 on failure. */
int sbx_snap_lock(const char *store, bool exclusive, struct sbx_error *e);

#endif
