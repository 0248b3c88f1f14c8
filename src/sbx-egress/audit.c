/* audit.c — the gateway's audit log: one JSON line per decision, written
 * whole with one append so concurrent tunnels never interleave; past
 * --log-max-bytes the file is copied to FILE.1 and emptied. */
#include "egress.h"
#include "../lib/clock.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int audit_open(struct gateway *g, const char *path, struct sbx_error *e)
{
	char old[PATH_MAX];
	struct stat st;
	snprintf(old, sizeof(old), "%s.1", path);
	g->log_fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (g->log_fd < 0 || fstat(g->log_fd, &st) != 0)
		return sbx_error_set(e, SBX_EXIT_USAGE, "bad-log", "--log: %s: %s", path, strerror(errno)), -1;
	g->log_size = st.st_size;
	g->log_old_fd = strlen(path) + 2 < sizeof(old) ? open(old, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
	if (g->log_old_fd < 0)
		return sbx_error_set(e, SBX_EXIT_USAGE, "bad-log", "--log: %s: %s", old,
				     strlen(path) + 2 < sizeof(old) ? strerror(errno) : "path too long"), -1;
	return 0;
}

/* Copies the log to FILE.1 and empties it (under the log lock). The
 * unprivileged gateway may not rename in sbx-run's root-owned directory,
 * so both files are opened before the drop and rotated by copying. A log
 * longer than the cap (written before there was one) keeps its last
 * whole lines that fit. */
static void rotate(struct gateway *g)
{
	static char buf[64 * 1024];
	struct stat st;
	off_t from = 0, at = 0;
	if (fstat(g->log_fd, &st) == 0 && st.st_size > g->log_max_bytes) {
		from = st.st_size - g->log_max_bytes;
		ssize_t n = pread(g->log_fd, buf, sizeof(buf), from - 1);
		char *nl = n > 0 ? memchr(buf, '\n', (size_t)n) : NULL;
		from = nl ? from + (nl - buf) : st.st_size;
	}
	for (;;) {
		ssize_t n = pread(g->log_fd, buf, sizeof(buf), from + at);
		if (n <= 0 || pwrite(g->log_old_fd, buf, (size_t)n, at) != n)
			break;
		at += n;
	}
	if (ftruncate(g->log_old_fd, at) == 0 && ftruncate(g->log_fd, 0) == 0)
		g->log_size = 0;
}

/* Appends one line (text without its newline, n bytes; the byte after it
 * is overwritten). */
static void append(struct gateway *g, char *text, size_t n)
{
	text[n] = '\n';
	pthread_mutex_lock(&g->log_lock);
	if (g->log_size + (long long)n + 1 > g->log_max_bytes)
		rotate(g);
	ssize_t w = write(g->log_fd, text, n + 1);
	if (w > 0)
		g->log_size += w;
	pthread_mutex_unlock(&g->log_lock);
}

static void write_json(struct gateway *g, json_t *line)
{
	char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;
	json_decref(line);
	if (text)
		append(g, text, strlen(text));
	free(text);
}

void audit_write(struct gateway *g, const struct audit *a)
{
	if (g->log_fd < 0)
		return;
	char now[SBX_ISO_TIME_SIZE];
	sbx_iso_time(sbx_wall_ms(), now);
	json_t *line = json_pack("{s:s,s:s,s:I,s:o,s:o,s:i,s:s?,s:s,s:i,s:o,s:I,s:I,s:I}", "time", now, "revision",
				g->policy.revision, "peer", (json_int_t)a->peer, "method", sbx_json_string_lossy(a->method),
				"host", sbx_json_string_lossy(a->host), "port", a->port, "address",
				*a->address ? a->address : NULL, "decision", a->decision, "status", a->status, "reason",
				sbx_json_string_lossy(a->reason), "bytesUp", (json_int_t)a->up, "bytesDown",
				(json_int_t)a->down, "durationMs", (json_int_t)(sbx_monotonic_ms() - a->started_ms));
	if (line && a->peer_pid > 0)
		json_object_set_new(line, "peerPid", json_integer(a->peer_pid));
	if (line && a->cause)
		json_object_set_new(line, "cause", json_string(a->cause));
	if (line && a->intercepted)
		json_object_set_new(line, "intercepted", json_true());
	if (line && a->secret[0])
		json_object_set_new(line, "secret", json_string(a->secret));
	write_json(g, line);
}

/* "peer uid U: N refusals of host:port (status: reason) in the last T s";
 * "N refusals, the first of host:port (...)" when they differed
 * (mixedTargets); peerPid when one process made them all. */
void audit_write_summary(struct gateway *g, const struct refusal_summary *s)
{
	if (g->log_fd < 0)
		return;
	char now[SBX_ISO_TIME_SIZE], target[360] = "", reason[900];
	const struct audit *f = &s->first;
	sbx_iso_time(sbx_wall_ms(), now);
	if (f->host[0])
		snprintf(target, sizeof(target), " of %.300s:%d", f->host, f->port);
	snprintf(reason, sizeof(reason), "peer uid %u: %lld refusals%s%s (%d: %.200s) in the last %lld s",
		 (unsigned)s->peer, s->count, s->same ? "" : ", the first", target, f->status, f->reason, s->seconds);
	json_t *line = json_pack("{s:s,s:s,s:I,s:s,s:I,s:I,s:o,s:i,s:i,s:o}", "time", now, "revision", g->policy.revision,
				 "peer", (json_int_t)s->peer, "decision", "refusals", "count", (json_int_t)s->count,
				 "seconds", (json_int_t)s->seconds, "host", sbx_json_string_lossy(f->host), "port",
				 f->port, "status", f->status, "reason", sbx_json_string_lossy(reason));
	if (line && s->one_pid && f->peer_pid > 0)
		json_object_set_new(line, "peerPid", json_integer(f->peer_pid));
	if (line && s->same && f->cause)
		json_object_set_new(line, "cause", json_string(f->cause));
	if (line && !s->same)
		json_object_set_new(line, "mixedTargets", json_true());
	write_json(g, line);
}
