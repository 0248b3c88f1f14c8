/* snap_scan.h — a workspace as a sorted list of entries (files, dirs,
 * symlinks) with the stat facts that tell whether a file changed: the input
 * of snapshots and of a run's created/modified/deleted lists. */
#ifndef SBX_SNAP_SCAN_H
#define SBX_SNAP_SCAN_H

#include "error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

enum sbx_entry_type { SBX_ENTRY_FILE = 'f', SBX_ENTRY_DIR = 'd', SBX_ENTRY_SYMLINK = 'l' };

struct sbx_snap_entry {
	char *path;       /* relative to the root, '/'-separated */
	char type;        /* enum sbx_entry_type */
	bool exec;        /* owner execute bit (files) */
	uint64_t size, dev, ino;
	int64_t mtime_ns, ctime_ns;
	char *target;     /* symlink target */
	char digest[72];  /* "sha256:<hex>" once known (files) */
};

struct sbx_snap_scan {
	struct sbx_snap_entry *v;
	size_t len, cap;
};

/* Walks root without following symlinks or crossing mount points; other
 * file types (fifos, sockets, devices) are left out. Sorted by path. */
int sbx_snap_scan(const char *root, struct sbx_snap_scan *s, struct sbx_error *e);
/* The same below a directory fd (O_RDONLY or O_PATH, left open and where
 * it was); errors name paths relative to it, never a host path. */
int sbx_snap_scan_at(int rootfd, struct sbx_snap_scan *s, struct sbx_error *e);
void sbx_snap_scan_free(struct sbx_snap_scan *s);

/* Regular files only (symlinks skipped), as the runner reports them:
 * created, deleted, and modified = size, mtime or inode changed (not the
 * ctime: a chown the runner made is no modification). */
void sbx_snap_fingerprint_diff(const struct sbx_snap_scan *before, const struct sbx_snap_scan *after,
			       json_t *created, json_t *modified, json_t *deleted);

#endif
