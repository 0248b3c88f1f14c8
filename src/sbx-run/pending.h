/* pending.h — a speculative run's pending change in its execution
 * directory: pending.json (the workspace's identity and fingerprint when
 * the run began, the overlay's xattr namespace, the expiry, the state)
 * and speculative/layer/ (upper/, work/) beside it. One holder at a time: an
 * flock on the execution directory (commit, discard, sweep). */
#ifndef SBX_RUN_PENDING_H
#define SBX_RUN_PENDING_H

#include "../lib/error.h"
#include "../lib/snap_scan.h"

#include <jansson.h>
#include <stdbool.h>

#define PENDING_FILE "pending.json"
#define PENDING_DIR "speculative"
#define PENDING_LAYER "layer"   /* in PENDING_DIR: upper/, work/, merged/ */
#define PENDING_RECORD_MAX (64u << 10)

/* "sha256:<hex>" over every entry of the scan (path, type, size, mtime,
 * inode, exec bit, symlink target; never the ctime, which the runner's
 * own chown moves): equal fingerprints, an unchanged workspace. */
void pending_fingerprint(const struct sbx_snap_scan *s, char out[72]);

/* The execution directory opened (never through a symlink) and locked;
 * wait: block for the lock, else -1 with EWOULDBLOCK when held. */
int pending_lock(const char *exec_dir, bool wait, struct sbx_error *e);

/* The record below dirfd; NULL with e (exit 2, "not-speculative") when
 * there is none. */
json_t *pending_read(int dirfd, struct sbx_error *e);
int pending_write(int dirfd, json_t *doc, struct sbx_error *e);

/* speculative/'s layer/ removed (overlayfs leaves layer/work/work mode
 * 000: made searchable again first). 0, or -1 with errno. */
int pending_remove_layer(int speculative_dir);

/* The change goes (speculative/ removed) and the record says state
 * ("committed", "discarded", "expired") and when. */
int pending_close(int dirfd, json_t *doc, const char *state, struct sbx_error *e);

/* True when the record is pending and its expiry has passed by now_ms. */
bool pending_expired(const json_t *doc, long long now_ms);

#endif
