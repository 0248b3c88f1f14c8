/* output.c — head file, ring file, and the final composition. Both
 * heads share half the budget first come, first served; each stream's ring
 * holds its last budget/2 bytes; at the end the tails share what the heads
 * left, so what is kept, markers included, never exceeds the budget. */
#include "output.h"
#include "../lib/exitcodes.h"
#include "../lib/hash.h"
#include "../lib/io.h"

#include <jansson.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const names[2] = { "stdout", "stderr" };

void sbx_output_marker(uint64_t budget, char *out, size_t size)
{
	snprintf(out, size, "\n...[output truncated: exceeded %llu bytes; set SCIENCE_AGENT_MAX_OUTPUT_BYTES=0 to disable]...\n",
		 (unsigned long long)budget);
}

static int io_fail(struct sbx_error *e, const char *what)
{
	sbx_error_set(e, SBX_EXIT_INTERNAL, "output-write", "%s: %s", what, strerror(errno));
	return -1;
}

int sbx_output_open(struct sbx_output *o, const char *dir, uint64_t budget, struct sbx_error *e)
{
	memset(o, 0, sizeof(*o));
	o->budget = budget;
	for (int i = 0; i < 2; i++) {
		struct sbx_output_stream *s = &o->s[i];
		s->ring_fd = -1;
		snprintf(s->path, sizeof(s->path), "%s/%s.txt", dir, names[i]);
		snprintf(s->ring_path, sizeof(s->ring_path), "%s/.%s.tail", dir, names[i]);
		s->fd = open(s->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (s->fd < 0)
			return io_fail(e, s->path);
	}
	return 0;
}

static uint64_t ring_cap(const struct sbx_output *o)
{
	return o->budget - o->budget / 2;
}

static int ring_write(struct sbx_output *o, struct sbx_output_stream *s, const char *buf, size_t len,
		      struct sbx_error *e)
{
	uint64_t cap = ring_cap(o);
	if (s->ring_fd < 0 && (s->ring_fd = open(s->ring_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
		return io_fail(e, s->ring_path);
	/* Only the last cap bytes of a large chunk can survive. */
	if (len > cap) {
		s->ring += len - cap;
		buf += len - cap;
		len = (size_t)cap;
	}
	while (len > 0) {
		uint64_t at = s->ring % cap;
		size_t n = len < cap - at ? len : (size_t)(cap - at);
		if (pwrite(s->ring_fd, buf, n, (off_t)at) != (ssize_t)n)
			return io_fail(e, s->ring_path);
		s->ring += n;
		buf += n;
		len -= n;
	}
	return 0;
}

int sbx_output_add(struct sbx_output *o, int i, const char *buf, size_t len, struct sbx_error *e)
{
	struct sbx_output_stream *s = &o->s[i];
	s->total += len;
	size_t to_head = len;
	if (o->budget) {
		uint64_t room = o->budget / 2 - o->head_used;
		/* Once a stream has spilled into its ring, its head is closed. */
		if (s->ring || room < to_head)
			to_head = s->ring ? 0 : (size_t)room;
	}
	if (to_head && sbx_write_all(s->fd, buf, to_head) != 0)
		return io_fail(e, s->path);
	s->head += to_head;
	o->head_used += to_head;
	return len > to_head ? ring_write(o, s, buf + to_head, len - to_head, e) : 0;
}

/* Bytes at the end of the head that start an incomplete UTF-8 character. */
static size_t incomplete_tail(int fd, uint64_t head)
{
	unsigned char b[4];
	size_t n = head < 4 ? (size_t)head : 4;
	if (n == 0 || pread(fd, b, n, (off_t)(head - n)) != (ssize_t)n)
		return 0;
	for (size_t k = 1; k <= n; k++) {
		unsigned char c = b[n - k];
		if ((c & 0xC0) == 0x80)
			continue; /* a continuation byte: look further back */
		size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
		return need > k ? k : 0;
	}
	return 0;
}

/* Appends the last keep bytes of the ring, skipping a split character. */
static int append_tail(struct sbx_output *o, struct sbx_output_stream *s, uint64_t keep, bool skip_partial,
		       struct sbx_error *e)
{
	uint64_t cap = ring_cap(o), start = s->ring - keep;
	char buf[65536];
	bool first = true;
	while (keep > 0) {
		uint64_t at = start % cap;
		size_t n = sizeof(buf);
		if (n > keep)
			n = (size_t)keep;
		if (n > cap - at)
			n = (size_t)(cap - at);
		if (pread(s->ring_fd, buf, n, (off_t)at) != (ssize_t)n)
			return io_fail(e, s->ring_path);
		size_t skip = 0;
		while (first && skip_partial && skip < n && skip < 3 && ((unsigned char)buf[skip] & 0xC0) == 0x80)
			skip++;
		first = false;
		if (sbx_write_all(s->fd, buf + skip, n - skip) != 0)
			return io_fail(e, s->path);
		start += n;
		keep -= n;
	}
	return 0;
}

/* What each tail keeps out of `left`: the tails share it, a smaller tail
 * giving its unused share to the other. */
static void share_tails(const struct sbx_output *o, uint64_t left, uint64_t kept[2])
{
	int spilled = (o->s[0].ring > 0) + (o->s[1].ring > 0);
	for (int i = 0; i < 2; i++)
		kept[i] = o->s[i].ring < ring_cap(o) ? o->s[i].ring : ring_cap(o);
	if (spilled == 2 && kept[0] + kept[1] > left) {
		uint64_t half = left / 2;
		if (kept[0] < half)
			kept[1] = left - kept[0];
		else if (kept[1] < half)
			kept[0] = left - kept[1];
		else
			kept[0] = half, kept[1] = left - half;
	} else {
		for (int i = 0; i < 2; i++)
			if (kept[i] > left)
				kept[i] = left;
	}
}

/* The SHA-256 of the composed file, read back through its fd. */
static int hash_file(struct sbx_output_stream *s, struct sbx_error *e)
{
	struct sbx_sha256 *h = sbx_sha256_new();
	char buf[65536];
	off_t at = 0;
	if (!h)
		return io_fail(e, "sha256");
	for (ssize_t n; (n = pread(s->fd, buf, sizeof(buf), at)) != 0; at += n) {
		if (n < 0) {
			sbx_sha256_free(h);
			return io_fail(e, s->path);
		}
		sbx_sha256_update(h, buf, (size_t)n);
	}
	sbx_sha256_final(h, s->sha256);
	return 0;
}

int sbx_output_finish(struct sbx_output *o, bool *truncated, struct sbx_error *e)
{
	char marker[160];
	*truncated = false;
	sbx_output_marker(o->budget, marker, sizeof(marker));
	uint64_t left = o->budget > o->head_used ? o->budget - o->head_used : 0, kept[2];
	/* Each cut stream carries a marker, and the markers count against the
	 * budget too: reserve them until the number of cuts is stable. */
	int markers = 0;
	for (int pass = 0; pass < 3; pass++) {
		uint64_t reserve = (uint64_t)markers * strlen(marker);
		share_tails(o, left > reserve ? left - reserve : 0, kept);
		int cuts = (o->s[0].ring > kept[0]) + (o->s[1].ring > kept[1]);
		if (cuts <= markers)
			break;
		markers = cuts;
	}
	for (int i = 0; i < 2; i++) {
		struct sbx_output_stream *s = &o->s[i];
		s->head_kept = s->head;
		if (s->ring) {
			s->truncated = s->ring > kept[i];
			if (s->truncated) {
				s->head_kept = s->head - incomplete_tail(s->fd, s->head);
				s->marker_bytes = strlen(marker);
				if (ftruncate(s->fd, (off_t)s->head_kept) != 0 || lseek(s->fd, 0, SEEK_END) < 0)
					return io_fail(e, s->path);
				if (sbx_write_all(s->fd, marker, strlen(marker)) != 0)
					return io_fail(e, s->path);
			}
			off_t before = lseek(s->fd, 0, SEEK_END);
			if (append_tail(o, s, kept[i], s->truncated, e) != 0)
				return -1;
			off_t after = lseek(s->fd, 0, SEEK_END);
			s->tail_kept = before >= 0 && after >= before ? (uint64_t)(after - before) : 0;
			if (!s->truncated) { /* everything was kept: the file is one piece */
				s->head_kept += s->tail_kept;
				s->tail_kept = 0;
			}
			*truncated = *truncated || s->truncated;
		}
		if (hash_file(s, e) != 0)
			return -1;
	}
	return 0;
}

json_t *sbx_output_reference(const struct sbx_output_stream *s)
{
	uint64_t bytes = s->head_kept + s->marker_bytes + s->tail_kept;
	return json_pack("{s:s,s:I,s:s,s:b,s:I,s:I,s:I,s:I}", "path", s->path, "bytes",
			 (json_int_t)bytes, "sha256", s->sha256, "truncated",
			 s->truncated, "totalBytes", (json_int_t)s->total, "headBytes", (json_int_t)s->head_kept,
			 "markerBytes", (json_int_t)s->marker_bytes, "tailBytes", (json_int_t)s->tail_kept);
}

void sbx_output_close(struct sbx_output *o)
{
	for (int i = 0; i < 2; i++) {
		struct sbx_output_stream *s = &o->s[i];
		if (s->fd >= 0)
			close(s->fd);
		if (s->ring_fd >= 0) {
			close(s->ring_fd);
			unlink(s->ring_path);
		}
		s->fd = s->ring_fd = -1;
	}
}
