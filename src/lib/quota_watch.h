/* quota_watch.h — the quota check a supervisor runs every interval: one
 * walk, compared against the limits (0 = unlimited). sbx-run and
 * `sbx-quota watch` both call it. */
#ifndef SBX_QUOTA_WATCH_H
#define SBX_QUOTA_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SBX_QUOTA_INTERVAL_MS 100

/* True when the charged bytes (sbx_usage) below a directory fd (O_PATH
 * too) exceed limit; *bytes gets them. */
bool sbx_quota_exceeded_at(int rootfd, uint64_t limit, uint64_t *bytes);

/* A workspace's check during a run: its charged bytes against max_bytes,
 * its names against max_files, and its depth (directories nested deeper
 * than SBX_WORKSPACE_MAX_DEPTH hide from the walks that bound it). Both
 * limits 0: nothing is walked. The walk stops at the first limit crossed. */
enum sbx_quota_state { SBX_QUOTA_FITS, SBX_QUOTA_OVER, SBX_QUOTA_OVER_FILES, SBX_QUOTA_TOO_DEEP };
enum sbx_quota_state sbx_quota_check_at(int rootfd, uint64_t max_bytes, uint64_t max_files, uint64_t *bytes);
/* Over either limit: the message for the one crossed (before or during a
 * run); false for FITS and TOO_DEEP. */
bool sbx_quota_breach(enum sbx_quota_state q, bool during, uint64_t max_bytes, uint64_t max_files, char *out,
		      size_t size);
static inline bool sbx_quota_over(enum sbx_quota_state q)
{
	return q == SBX_QUOTA_OVER || q == SBX_QUOTA_OVER_FILES;
}

#endif
