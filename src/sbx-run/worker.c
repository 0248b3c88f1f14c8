/* worker.c — handling the worker's messages under the caps. */
#include "worker.h"
#include "../lib/beneath.h"
#include "run.h"
#include "../lib/atomic_file.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "../lib/snap_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const folders[] = { "checkpoints", "media", "outputs" };

/* A scratch directory, or the one a standby made ahead (a directory, not
 * a symlink: nobody but us has written there yet). */
static int make_dir(const char *path)
{
	struct stat st;
	if (mkdir(path, 0700) == 0)
		return 0;
	return errno == EEXIST && lstat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

int worker_open(struct run *r, uid_t uid, gid_t gid, bool chown_scratch, struct sbx_error *e)
{
	struct worker *w = &r->worker;
	int pair[2];

	w->media = json_array();
	w->checkpoints = json_array();
	sbx_channel_init(&w->channel, r->req.caps.frame_bytes);
	snprintf(w->scratch, sizeof(w->scratch), "%s/scratch", r->exec_dir);
	/* All made first, then handed over: the supervisor keeps no right to
	 * write into what the workload owns. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = -1; i < 3; i++) {
			char path[PATH_MAX + 400];
			snprintf(path, sizeof(path), "%s%s%s", w->scratch, i < 0 ? "" : "/", i < 0 ? "" : folders[i]);
			int rc = pass == 0 ? make_dir(path) : chown_scratch ? chown(path, uid, gid) : 0;
			if (rc != 0) {
				sbx_error_set(e, SBX_EXIT_INTERNAL, "scratch-failed", "%s: %s", path, strerror(errno));
				return -1;
			}
		}
	/* The execution directory must be searchable for the workload's uid. */
	if (chown_scratch)
		chmod(r->exec_dir, 0711);
	if ((w->scratch_fd = open(w->scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "channel-failed", "worker channel: %s", strerror(errno));
		return -1;
	}
	w->fd = pair[0];
	w->sandbox_end = pair[1];
	fcntl(w->fd, F_SETFL, O_NONBLOCK);
	char ref[32];
	snprintf(ref, sizeof(ref), "fd:%d", w->scratch_fd);
	json_object_set_new(r->req.spec, "scratch", json_string(ref));
	return 0;
}

/* What checkpoints and media may copy into the store in all: caps.storedBytes,
 * never more than the workspace's quota (named in *which). */
static uint64_t stored_cap(const struct run *r, const char **which)
{
	*which = "caps.storedBytes";
	if (r->req.max_workspace_bytes && r->req.max_workspace_bytes < r->req.caps.stored_bytes) {
		*which = "maxWorkspaceBytes";
		return r->req.max_workspace_bytes;
	}
	return r->req.caps.stored_bytes;
}

void worker_send_start(struct run *r)
{
	struct worker *w = &r->worker;
	const struct sbx_worker_caps *c = &r->req.caps;
	const char *which;
	json_t *start = json_pack("{s:s,s:s,s:{s:I,s:I,s:I},s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I},s:{s:s,s:s,s:s,s:s}}",
		"type", "start", "runId", r->req.execution_id,
		"limits", "timeoutMs", (json_int_t)r->req.timeout_ms,
		"maxWorkspaceBytes", (json_int_t)r->req.max_workspace_bytes,
		"maxOutputBytes", (json_int_t)r->req.max_output_bytes,
		"caps", "frameBytes", (json_int_t)c->frame_bytes, "events", (json_int_t)c->events,
		"trackingMessages", (json_int_t)c->tracking, "logBytes", (json_int_t)c->log_bytes,
		"scratchBytes", (json_int_t)c->scratch_bytes, "outputBytes", (json_int_t)c->output_bytes,
		"mediaCount", (json_int_t)c->media_count, "mediaBytes", (json_int_t)c->media_bytes,
		"storedBytes", (json_int_t)stored_cap(r, &which),
		"scratch", "root", "/scratch", "checkpoints", "/scratch/checkpoints", "media", "/scratch/media",
		"outputs", "/scratch/outputs");
	size_t len;
	char *frame = sbx_channel_encode(start, &len);
	json_decref(start);
	/* Best effort: a worker that never reads its channel is not an error. */
	if (frame && send(w->fd, frame, len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		sbx_diag("warning", "channel-start", NULL, "the start message was not delivered: %s", strerror(errno));
	free(frame);
}

static int stop_with(struct worker *w, enum worker_outcome outcome, const char *fmt, const char *a)
{
	w->outcome = outcome;
	snprintf(w->why, sizeof(w->why), fmt, a);
	return 1;
}

/* A file below scratch/<folder>/, opened without following symlinks and
 * hashed into the store under the caps; fills digest and size. */
static int ingest(struct run *r, const char *folder, const char *rel, char digest[72], uint64_t *size)
{
	struct worker *w = &r->worker;
	struct sbx_error e = { 0 };
	struct stat st;
	char path[PATH_MAX];
	const char *which;

	snprintf(path, sizeof(path), "%s/%s", folder, rel);
	/* Non-blocking: a FIFO the workload names must not stop this loop. */
	int fd = sbx_open_beneath(w->scratch_fd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, SBX_BENEATH_NO_SYMLINKS);
	if (fd < 0)
		return stop_with(w, WORKER_VIOLATION, "%.300s: not a file inside scratch (symlinks are not followed)", path);
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return stop_with(w, WORKER_VIOLATION, "%.300s: not a regular file", path);
	}
	uint64_t total = stored_cap(r, &which), room = total > w->stored_bytes ? total - w->stored_bytes : 0;
	bool item_bound = r->req.caps.media_bytes <= room;
	uint64_t cap = item_bound ? r->req.caps.media_bytes : room;
	int rc = 0;
	/* No more than cap bytes are copied: the store never holds more. */
	if (r->store[0])
		rc = sbx_snap_store_fd(r->store, fd, cap, &r->pin, digest, size, &e);
	else if ((uint64_t)st.st_size > cap)
		rc = -1, e.exit_code = SBX_EXIT_RESOURCE;
	else
		digest[0] = '\0', *size = (uint64_t)st.st_size;
	close(fd);
	if (rc != 0 && e.exit_code == SBX_EXIT_RESOURCE && item_bound) {
		snprintf(w->why, sizeof(w->why), "%.300s: larger than caps.mediaBytes (%llu bytes)", path,
			 (unsigned long long)cap);
		w->outcome = WORKER_EXHAUSTED;
		return 1;
	}
	if (rc != 0 && e.exit_code == SBX_EXIT_RESOURCE) {
		snprintf(w->why, sizeof(w->why),
			 "%.300s: checkpoints and media would copy more than %llu bytes into the snapshot store (%s)", path,
			 (unsigned long long)total, which);
		w->outcome = WORKER_EXHAUSTED;
		return 1;
	}
	if (rc != 0)
		return stop_with(w, WORKER_VIOLATION, "%.300s", e.message);
	w->stored_bytes += *size;
	return 0;
}

static void emit(struct run *r, const char *type, json_t *m)
{
	char name[48];
	json_t *data = json_deep_copy(m);
	json_object_del(data, "type");
	snprintf(name, sizeof(name), "worker.%s", type);
	run_event(name, r, data);
}

/* Advisory caps drop the message, with one warning event the first time. */
static bool advisory(struct run *r, bool over, bool *warned, const char *what)
{
	if (!over)
		return false;
	if (!*warned) {
		*warned = true;
		run_event("warning", r, json_pack("{s:s,s:s}", "code", "cap-reached",
						  "message", what));
	}
	return true;
}

static size_t tracking_of(const char *type, json_t *m)
{
	if (!strcmp(type, "metric") || !strcmp(type, "user_log"))
		return 1;
	if (!strcmp(type, "metrics"))
		return json_array_size(json_object_get(m, "points"));
	if (!strcmp(type, "params") || !strcmp(type, "tags"))
		return json_object_size(json_object_get(m, type));
	return 0;
}

static int on_message(json_t *m, const char *type, void *arg)
{
	struct run *r = arg;
	struct worker *w = &r->worker;
	const struct sbx_worker_caps *c = &r->req.caps;

	if (++w->messages > c->events)
		return stop_with(w, WORKER_EXHAUSTED, "%s", "the worker sent more messages than caps.events allows");
	size_t tracking = tracking_of(type, m);
	if (tracking) {
		w->tracking += tracking;
		if (advisory(r, w->tracking > c->tracking, &w->tracking_dropped,
			     "caps.trackingMessages reached: further metrics, params, tags and log lines are dropped"))
			return 0;
	}
	if (!strcmp(type, "user_log")) {
		w->log_bytes += json_string_length(json_object_get(m, "message"));
		if (advisory(r, w->log_bytes > c->log_bytes, &w->log_dropped,
			     "caps.logBytes reached: further log lines are dropped"))
			return 0;
	}
	if (!strcmp(type, "progress")) {
		/* Coalesced: the latest value wins, at most one per interval. */
		json_decref(w->pending_progress);
		w->pending_progress = json_incref(m);
		worker_tick(r, false);
		return 0;
	}
	if (!strcmp(type, "media") || !strcmp(type, "checkpoint")) {
		char digest[72];
		uint64_t size = 0;
		bool media = !strcmp(type, "media");
		if (media && ++w->media_count > c->media_count)
			return stop_with(w, WORKER_EXHAUSTED, "%s", "more media items than caps.mediaCount allows");
		if (ingest(r, media ? "media" : "checkpoints", json_string_value(json_object_get(m, "path")), digest, &size))
			return 1;
		json_t *rec = json_deep_copy(m);
		json_object_del(rec, "type");
		json_object_set_new(rec, "digest", json_string(digest));
		json_object_set_new(rec, "size", json_integer((json_int_t)size));
		json_array_append(media ? w->media : w->checkpoints, rec);
		char name[48];
		snprintf(name, sizeof(name), "worker.%s", type);
		run_event(name, r, rec);
		return 0;
	}
	if (!strcmp(type, "result") || !strcmp(type, "error")) {
		worker_tick(r, true); /* the last progress goes before the end */
		json_t **slot = !strcmp(type, "result") ? &w->result : &w->error;
		*slot = json_deep_copy(m);
		json_object_del(*slot, "type");
	}
	emit(r, type, m);
	return 0;
}

void worker_expect_terminal(struct run *r)
{
	struct worker *w = &r->worker;
	if (r->req.require_terminal && w->outcome == WORKER_OK && !w->result && !w->error)
		stop_with(w, WORKER_VIOLATION, "%s",
			  "the worker ended without the result or error message the request requires (requireTerminalMessage)");
}

enum worker_outcome worker_read(struct run *r)
{
	struct worker *w = &r->worker;
	char buf[65536];

	while (w->fd >= 0 && w->outcome == WORKER_OK) {
		ssize_t n = recv(w->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			close(w->fd);
			w->fd = -1;
			/* The channel closed mid-frame: what was cut off is not accepted. */
			if (sbx_channel_mid_frame(&w->channel))
				stop_with(w, WORKER_VIOLATION, "%s", "the worker channel closed in the middle of a frame");
			break;
		}
		int rc = sbx_channel_feed(&w->channel, buf, (size_t)n, on_message, r);
		if (rc < 0)
			stop_with(w, WORKER_VIOLATION, "%s", w->channel.violation);
	}
	return w->outcome;
}

void worker_tick(struct run *r, bool flush)
{
	struct worker *w = &r->worker;
	long long now = run_now_ms();
	if (!w->pending_progress)
		return;
	if (!flush && now - w->last_progress_ms < r->req.caps.progress_interval_ms)
		return;
	w->last_progress_ms = now;
	emit(r, "progress", w->pending_progress);
	json_decref(w->pending_progress);
	w->pending_progress = NULL;
}

/* Every regular file under outputs/, fd-relative and without symlinks. */
static void collect(struct run *r, int dirfd, const char *prefix, json_t *files, uint64_t *total, bool *complete,
		    int depth)
{
	int listfd = dup(dirfd);
	DIR *d = listfd >= 0 ? fdopendir(listfd) : NULL;
	for (struct dirent *de; d && (de = readdir(d));) {
		char rel[PATH_MAX];
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(rel, sizeof(rel), "%s%s%s", prefix, *prefix ? "/" : "", de->d_name);
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 64) {
			int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				collect(r, sub, rel, files, total, complete, depth + 1);
				close(sub);
			}
			continue;
		}
		if (!S_ISREG(st.st_mode)) {
			*complete = false; /* symlinks and devices are not outputs */
			continue;
		}
		/* Checked again through the fd: the name may have changed since. */
		int fd = sbx_open_beneath(dirfd, de->d_name, O_RDONLY | O_NONBLOCK | O_NOCTTY, SBX_BENEATH_NO_SYMLINKS);
		if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
			close(fd);
			fd = -1;
		}
		char digest[72] = "";
		uint64_t size = 0;
		struct sbx_error e = { 0 };
		uint64_t room = r->req.caps.output_bytes > *total ? r->req.caps.output_bytes - *total : 0;
		if (r->job && fd >= 0) { /* streamed to the store of the job, not copied here */
			json_t *rec = NULL;
			size = (uint64_t)st.st_size;
			bool fits = size <= room;
			if (fits && run_job_output(r, fd, rel, size, &rec, &e) == 0) {
				*total += size;
				json_array_append_new(files, rec);
			} else {
				*complete = false;
				if (!fits)
					stop_with(&r->worker, WORKER_EXHAUSTED, "%s", "outputs larger than caps.outputBytes");
				else if (e.exit_code == SBX_EXIT_VIOLATION)
					run_event("warning", r, json_pack("{s:s,s:s,s:o}", "code", "output-skipped", "message", e.message,
									  "path", sbx_json_string_lossy(rel)));
			}
			close(fd);
			continue;
		}
		if (fd < 0 || room == 0 || !r->store[0] || sbx_snap_store_fd(r->store, fd, room, &r->pin, digest, &size, &e) != 0) {
			*complete = false;
			if (fd >= 0)
				close(fd);
			if (room == 0 || (r->store[0] && e.exit_code == SBX_EXIT_RESOURCE))
				stop_with(&r->worker, WORKER_EXHAUSTED, "%s", "outputs larger than caps.outputBytes");
			continue;
		}
		close(fd);
		*total += size;
		json_array_append_new(files, json_pack("{s:s,s:I,s:s}", "path", rel, "size", (json_int_t)size, "digest", digest));
	}
	if (d)
		closedir(d);
}

json_t *worker_outputs(struct run *r)
{
	struct worker *w = &r->worker;
	json_t *files = json_array();
	uint64_t total = 0;
	bool complete = true;
	int fd = w->scratch_fd >= 0 ? openat(w->scratch_fd, "outputs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (fd >= 0) {
		collect(r, fd, "", files, &total, &complete, 0);
		close(fd);
	}
	return json_pack("{s:o,s:I,s:b}", "files", files, "bytes", (json_int_t)total, "complete", complete);
}

void worker_close(struct worker *w)
{
	int *fds[] = { &w->fd, &w->sandbox_end, &w->scratch_fd };
	for (size_t i = 0; i < 3; i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
	sbx_channel_free(&w->channel);
	json_decref(w->pending_progress);
	json_decref(w->result);
	json_decref(w->error);
	json_decref(w->media);
	json_decref(w->checkpoints);
	w->pending_progress = w->result = w->error = w->media = w->checkpoints = NULL;
}
