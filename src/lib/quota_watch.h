/* quota_watch.h — the quota check a supervisor runs every interval: one
 * walk, compared against the limit (0 = unlimited). sbx-run and
 * `sbx-quota watch` both call it. */
#ifndef SBX_QUOTA_WATCH_H
#define SBX_QUOTA_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#define SBX_QUOTA_INTERVAL_MS 100

/* True when root holds more than limit bytes; *bytes gets the usage. */
bool sbx_quota_exceeded(const char *root, uint64_t limit, uint64_t *bytes);
/* The same for a directory fd (O_PATH too). */
bool sbx_quota_exceeded_at(int rootfd, uint64_t limit, uint64_t *bytes);

/* A workspace's check during a run: its bytes, and its depth (directories
 * nested deeper than SBX_WORKSPACE_MAX_DEPTH hide from the walks that bound
 * it). limit 0: nothing is walked. */
enum sbx_quota_state { SBX_QUOTA_FITS, SBX_QUOTA_OVER, SBX_QUOTA_TOO_DEEP };
enum sbx_quota_state sbx_quota_check_at(int rootfd, uint64_t limit, uint64_t *bytes);

#endif
