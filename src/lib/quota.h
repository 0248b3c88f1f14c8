/* quota.h — how much a tree holds: apparent bytes of regular files, counts
 * by type, hard links counted once, symlinks never followed, mount points
 * never crossed, unreadable entries reported rather than fatal. */
#ifndef SBX_QUOTA_H
#define SBX_QUOTA_H

#include "error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define SBX_QUOTA_DEFAULT_BYTES (10ull << 30) /* 10 GiB, the upstream default */
#define SBX_QUOTA_MAX_ERRORS 100             /* errors listed; the rest are counted */

struct sbx_usage {
	uint64_t bytes, files, dirs, symlinks, other, hardlinks_deduped;
	uint64_t errors_total;
	unsigned max_depth;   /* the deepest directory level entered (the root's children: 1) */
	json_t *errors;       /* [{path, error}], at most SBX_QUOTA_MAX_ERRORS */
};

/* Walks root. -1 only when root itself cannot be opened. */
int sbx_quota_usage(const char *root, struct sbx_usage *u, struct sbx_error *e);
/* The same below a directory fd (O_RDONLY or O_PATH, left open and where
 * it was); error paths start at ".". */
int sbx_quota_usage_at(int rootfd, struct sbx_usage *u, struct sbx_error *e);
json_t *sbx_usage_json(const struct sbx_usage *u);
void sbx_usage_free(struct sbx_usage *u);

/* The upstream message texts for a breach before and during a run. */
void sbx_quota_message(bool during, uint64_t limit, char *out, size_t size);

#endif
