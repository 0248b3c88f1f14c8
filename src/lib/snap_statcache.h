/* snap_statcache.h — a commit's stat facts (every entry, in scan order) with
 * each file's digest and the manifest they made: read back in one merge walk,
 * so an unchanged workspace is neither hashed nor described again. */
#ifndef SBX_SNAP_STATCACHE_H
#define SBX_SNAP_STATCACHE_H

#include "snap_scan.h"

#include <stdbool.h>
#include <stddef.h>

struct sbx_statcache {
	char *buf;           /* the whole file; NULL when absent or unreadable */
	size_t len, pos;     /* pos: the next record the walk has not passed */
	uint64_t count, seen;
	int64_t written_ns;  /* the cache file's mtime: entries changed since are racy */
	bool has_manifest;
	bool same;           /* every entry so far matched the next record */
	char manifest[72];
};

/* Reads the cache (a missing, foreign or damaged file is an empty cache). */
void sbx_statcache_load(const char *path, struct sbx_statcache *c);
/* Called for each scan entry in order: fills x->digest and returns true when
 * x is a file the cache vouches for by every stat fact. */
bool sbx_statcache_match(struct sbx_statcache *c, struct sbx_snap_entry *x);
/* After the last entry: the manifest digest of the last commit when every
 * entry matched (the manifest is then the same), else NULL. */
const char *sbx_statcache_manifest(const struct sbx_statcache *c, size_t entries);
/* Writes the scan (digests filled) and its manifest digest, durably (a
 * torn cache must not vouch for a file); best effort: a lost one is a rehash. */
void sbx_statcache_save(const char *path, const struct sbx_snap_scan *s, const char *manifest);
void sbx_statcache_free(struct sbx_statcache *c);
/* The manifest digest a cache file's header names (unverified: the body
 * is checked when the cache is loaded); false when it names none. */
bool sbx_statcache_manifest_of(const char *path, char out[72]);

#endif
