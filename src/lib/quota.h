/* quota.h — what a tree costs: the bytes every inode holds (allocated or
 * apparent), its inodes and names, hard links once, symlinks never
 * followed, mount points never crossed, unreadable entries reported. */
#ifndef SBX_QUOTA_H
#define SBX_QUOTA_H

#include "error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define SBX_QUOTA_DEFAULT_BYTES (10ull << 30) /* 10 GiB, the upstream default */
#define SBX_QUOTA_DEFAULT_FILES 100000ull    /* names below the root (maxWorkspaceFiles) */
#define SBX_QUOTA_MAX_ERRORS 100             /* errors listed; the rest are counted */

/* Everything counts below the root, never the root itself; each inode once
 * however many names it has. */
struct sbx_usage {
	uint64_t bytes;         /* apparent size of regular files (st_size) */
	uint64_t disk_bytes;    /* allocated: st_blocks * 512 of every inode */
	uint64_t charged_bytes; /* the byte quota's measure: per inode the larger
				 * of st_size and st_blocks * 512 */
	uint64_t inodes;        /* files + dirs + symlinks + other */
	uint64_t entries;       /* names, a hard link's each (the file quota's measure) */
	uint64_t files, dirs, symlinks, other, hardlinks_deduped;
	uint64_t errors_total;
	unsigned max_depth;   /* the deepest directory level entered (the root's children: 1) */
	bool stopped;         /* a stop limit was crossed: the walk ended there, counts are partial */
	json_t *errors;       /* [{path, error}], at most SBX_QUOTA_MAX_ERRORS */
};

/* Walks root. -1 only when root itself cannot be opened. */
int sbx_quota_usage(const char *root, struct sbx_usage *u, struct sbx_error *e);
/* The same below a directory fd (O_RDONLY or O_PATH, left open and where
 * it was); error paths start at ".". */
int sbx_quota_usage_at(int rootfd, struct sbx_usage *u, struct sbx_error *e);
/* The same, ending the walk (u->stopped) as soon as charged_bytes exceeds
 * max_bytes or entries exceeds max_files (0: no such limit), so a check
 * costs at most max_files names whatever the tree holds. */
int sbx_quota_usage_capped_at(int rootfd, uint64_t max_bytes, uint64_t max_files, struct sbx_usage *u,
			      struct sbx_error *e);
json_t *sbx_usage_json(const struct sbx_usage *u);
void sbx_usage_free(struct sbx_usage *u);

/* The upstream message texts for a breach before and during a run. */
void sbx_quota_message(bool during, uint64_t limit, char *out, size_t size);
/* The same for the file quota (maxWorkspaceFiles). */
void sbx_quota_files_message(bool during, uint64_t limit, char *out, size_t size);

#endif
