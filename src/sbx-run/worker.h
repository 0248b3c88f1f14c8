/* worker.h — the supervisor's side of the worker channel: the start
 * message, every message the worker sends (validated by the decoder, then
 * counted against the caps), progress coalesced, checkpoints, media and
 * outputs read safely from scratch and hashed into the snapshot store. */
#ifndef SBX_RUN_WORKER_H
#define SBX_RUN_WORKER_H

#include "../lib/channel.h"
#include "../lib/run_request.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

struct run;

enum worker_outcome { WORKER_OK, WORKER_VIOLATION, WORKER_EXHAUSTED };

struct worker {
	struct sbx_channel channel;
	int fd, sandbox_end;    /* our end of the socketpair; the sandbox's end */
	int scratch_fd;
	char scratch[PATH_MAX + 300];
	uint64_t messages, tracking, log_bytes, media_count;
	uint64_t stored_bytes;  /* checkpoints and media copied into the store */
	bool tracking_dropped, log_dropped;
	json_t *pending_progress;
	long long last_progress_ms;
	json_t *result, *error; /* the terminal message */
	json_t *media;          /* [{path, kind, caption, digest, size}] */
	json_t *checkpoints;    /* [{path, digest, size, ...}] in report order */
	enum worker_outcome outcome;
	char why[512];
};

/* Scratch folders (owned by uid/gid when switching) and the socketpair. */
int worker_open(struct run *r, uid_t uid, gid_t gid, bool chown_scratch, struct sbx_error *e);
/* The one start message: run id, limits, caps, scratch paths. */
void worker_send_start(struct run *r);
/* Reads what the channel holds; a violation or a hard cap ends the run. */
enum worker_outcome worker_read(struct run *r);
/* After the worker ended on its own: with requireTerminalMessage, no
 * result or error message is a violation. */
void worker_expect_terminal(struct run *r);
/* Emits a coalesced progress event that is due (or all, when flush). */
void worker_tick(struct run *r, bool flush);
/* The outputs manifest: files under /scratch/outputs, hashed into the store. */
json_t *worker_outputs(struct run *r);
void worker_close(struct worker *w);

#endif
