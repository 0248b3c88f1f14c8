/* snap_store.h — a content-addressed snapshot store: file contents and tree
 * manifests as sha256-named objects, refs published atomically with a
 * reflog, and a stat cache so unchanged files are not hashed again.
 *
 *   <store>/objects/<2 hex>/<62 hex>   contents and manifests, written once
 *   <store>/refs/<name>                "sha256:<hex>\n"
 *   <store>/refs/<name>.log            one JSON line per update {at, digest}
 *   <store>/statcache/<key>.bin        per workspace: stat facts -> digest
 *   <store>/tmp/                       objects being written
 *   <store>/pins/<random>              digests a live run stored (flocked by it)
 *   <store>/lock                       writers share it, gc takes it alone, briefly
 *   <store>/gc.lock                    one collection at a time; mtime: the last
 *   <store>/gc.json                    the last collection's receipt */
#ifndef SBX_SNAP_STORE_H
#define SBX_SNAP_STORE_H

#include "error.h"
#include "map.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define SBX_SNAP_MEDIA_TYPE "application/vnd.sbx.tree.v1+json"
#define SBX_SNAP_POOL "agent-state"

/* The defaults of the store's bounds (sbx-snap(1), sbx-run(1)). */
#define SBX_SNAP_MANIFEST_MAX_DEFAULT (64ull << 20) /* a manifest's bytes */
#define SBX_SNAP_MANIFEST_READ_MAX (256ull << 20)   /* what a reader accepts */
#define SBX_SNAP_KEEP_DEFAULT 20u                   /* versions per ref */
#define SBX_SNAP_GC_INTERVAL_DEFAULT 600u           /* seconds between collections */
#define SBX_SNAP_MIN_AGE_DEFAULT 60u                /* seconds an unreachable object stays */
#define SBX_SNAP_NO_CAP UINT64_MAX

/* Commits the workspace; ref may be NULL. Returns the receipt
 * {digest, size, files, bytes, mediaType, pool, hashedFiles,
 * manifestStored[, ref]} or NULL; hashedFiles counts the files the stat
 * cache could not vouch for, manifestStored whether the manifest was new
 * to the store. A manifest over max_manifest bytes is refused (exit 6,
 * code manifest-too-large) before anything of it is stored. */
struct sbx_snap_scan;
json_t *sbx_snap_commit(const char *workspace, const char *store, const char *ref, uint64_t max_manifest,
			struct sbx_error *e);
struct sbx_snap_scan;
/* The same for a workspace held as a directory fd (O_PATH too), with the
 * caller's scan of it taken just now (NULL: scanned here); its file
 * entries get their digests. */
json_t *sbx_snap_commit_scanned(int wsfd, const char *store, const char *ref, struct sbx_snap_scan *scan,
				uint64_t max_manifest, struct sbx_error *e);

/* A run's pins: the digests it stored that no ref reaches yet (media,
 * checkpoints, outputs), kept from collection while the run holds the
 * file's flock; opened on first use, removed by close. */
struct sbx_snap_pin {
	int fd;           /* -1: none yet */
	struct sbx_map seen; /* each digest once */
	char path[4200];
};
void sbx_snap_pin_init(struct sbx_snap_pin *p);
void sbx_snap_pin_close(struct sbx_snap_pin *p);

/* Copies an open file into the store as an object, hashed in the same
 * read; more than cap bytes (SBX_SNAP_NO_CAP: none) is an error (exit 6)
 * and no more than cap bytes are ever written. pin may be NULL. */
int sbx_snap_store_fd(const char *store, int fd, uint64_t cap, struct sbx_snap_pin *pin, char digest[72],
		      uint64_t *size, struct sbx_error *e);

/* The same for exactly size bytes of fd (what it had when opened): one
 * that grew is stored as it was, one that came up short fails (exit 2). */
int sbx_snap_store_fd_exact(const char *store, int fd, uint64_t size, struct sbx_snap_pin *pin, char digest[72],
			    struct sbx_error *e);
/* Commits a scan whose file entries carry their digests already (stored
 * by the caller with its pin): the manifest is stored and pinned (pin may
 * be NULL), everything made durable, then ref moves with a reflog line,
 * also when it names that manifest already (each commit is a version).
 * Returns {digest, size, files, bytes} or NULL. */
json_t *sbx_snap_commit_entries(const char *store, const char *ref, const struct sbx_snap_scan *scan,
				uint64_t max_manifest, struct sbx_snap_pin *pin, struct sbx_error *e);

/* Points ref at digest, a manifest the store holds whose objects are
 * durable (a fork's first version), with a reflog line, under the store's
 * shared lock. 0, or -1 with e (exit 2 for a digest the store lacks). */
int sbx_snap_ref_point(const char *store, const char *ref, const char *digest, struct sbx_error *e);

/* A digest ("sha256:<hex>") or a ref name, resolved to a digest. */
int sbx_snap_resolve(const char *store, const char *what, char digest[72], struct sbx_error *e);
/* The manifest of a digest, checked against its digest. */
json_t *sbx_snap_manifest(const char *store, const char *digest, struct sbx_error *e);
/* The reflog of a ref: [{at, digest}], oldest first. */
json_t *sbx_snap_log(const char *store, const char *ref, struct sbx_error *e);
/* Collection (snap_gc.c): keeps the last keep versions of every ref's
 * reflog (0: all) and the ref itself, drops every object none of them
 * reaches that is older than min_age_s and than the collection's start,
 * unless a live run pins it. Commits and stores wait only for short
 * batches. lock_fd: <store>/gc.lock, flocked by the caller (-1: taken
 * here, or fail when another collection holds it). Prints nothing; returns
 * {removed, kept, bytesFreed, versionsDropped, statCachesDropped, pins,
 * durationMs}, also written to <store>/gc.json. */
struct sbx_snap_gc_opts {
	unsigned keep, min_age_s;
	int lock_fd;
};
json_t *sbx_snap_gc(const char *store, const struct sbx_snap_gc_opts *o, struct sbx_error *e);
/* Claims a collection that is due: <store>/gc.lock flocked without
 * waiting (none while another runs) and its mtime older than interval_s
 * (a new store's first is one interval after its first claim); the fd,
 * its mtime set to now, or -1 when none is due. */
int sbx_snap_gc_claim(const char *store, unsigned interval_s);

/* Shared helpers of the store's files. */
bool sbx_snap_valid_ref(const char *name);
bool sbx_snap_valid_digest(const char *digest);
int sbx_snap_object_path(const char *store, const char *digest, char *out, size_t size);
/* Opens <store>/lock and flocks it (exclusive for gc); -1 on failure. */
int sbx_snap_lock(const char *store, bool exclusive, struct sbx_error *e);
/* <store>/<name> opened (created 0600, never through a symlink) and
 * flock'd as `how` says (LOCK_EX, LOCK_SH, | LOCK_NB); the fd, or -1 and e. */
int sbx_snap_lockfile(const char *store, const char *name, int how, struct sbx_error *e);
/* The store's directories, made when missing. */
int sbx_snap_prepare(const char *store, struct sbx_error *e);
/* Moves a finished temp file to its object path; an object already there
 * is kept and its mtime set to now (collection spares it). Under the
 * shared lock. */
int sbx_snap_publish(const char *store, const char *tmp, const char *digest, struct sbx_error *e);
/* sbx_snap_store_fd's copy, under the shared lock the caller holds, with
 * its buffer of SBX_SNAP_COPY_BUF bytes. */
#define SBX_SNAP_COPY_BUF (256 * 1024)
int sbx_snap_store_stream(const char *store, int in, char *buf, uint64_t cap, char digest[72], uint64_t *size,
			  struct sbx_error *e);
/* Sets an existing object's mtime to now: 0, or -1 when it is not there. */
int sbx_snap_freshen(const char *store, const char *digest);
/* snap_manifest.c: the canonical manifest of a scan, streamed through a
 * SHA-256 into fd (-1: only hashed); fails (exit 6, manifest-too-large)
 * past cap bytes. Counts files and their bytes. */
int sbx_snap_manifest_write(const struct sbx_snap_scan *s, int fd, uint64_t cap, char digest[72], uint64_t *size,
			    uint64_t *files, uint64_t *bytes, struct sbx_error *e);
/* snap_pin.c: adds a stored digest to the pins (opened on first use). */
int sbx_snap_pin_add(const char *store, struct sbx_snap_pin *p, const char *digest, struct sbx_error *e);

#endif
