/* audit_follow.c — reads a rotated JSON-lines log from where we were: a
 * shrunken file, or changed bytes just before our offset, mean it was
 * copied to FILE.1 (read on from our offset there, then FILE from 0). */
#include "audit_follow.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (64 * 1024)

static bool tail_matches(const struct audit_follow *f, int fd)
{
	char now[sizeof(f->tail)];
	return !f->tail_len || (f->offset >= (off_t)f->tail_len &&
				pread(fd, now, f->tail_len, f->offset - (off_t)f->tail_len) == (ssize_t)f->tail_len &&
				!memcmp(now, f->tail, f->tail_len));
}

/* Keeps the last bytes before the new offset. */
static void advance(struct audit_follow *f, const char *buf, size_t used)
{
	char joined[2 * sizeof(f->tail)];
	size_t keep = used < sizeof(f->tail) ? used : sizeof(f->tail);
	size_t old = sizeof(f->tail) - keep < f->tail_len ? sizeof(f->tail) - keep : f->tail_len;
	memcpy(joined, f->tail + f->tail_len - old, old);
	memcpy(joined + old, buf + used - keep, keep);
	memcpy(f->tail, joined, old + keep);
	f->tail_len = old + keep;
	f->offset += (off_t)used;
}

/* FILE from its start (after FILE.1 was read, or lost). */
static void to_new_generation(struct audit_follow *f)
{
	if (f->old_fd >= 0)
		close(f->old_fd);
	f->old_fd = -1;
	f->in_old = f->skipping = false;
	f->offset = 0;
	f->tail_len = 0;
}

int audit_follow_open(struct audit_follow *f, const char *path)
{
	struct stat st;
	memset(f, 0, sizeof(*f));
	f->old_fd = -1;
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (f->fd < 0)
		return -1;
	if (fstat(f->fd, &st) != 0) {
		close(f->fd);
		f->fd = -1;
		return -1;
	}
	f->offset = st.st_size;
	f->tail_len = f->offset < (off_t)sizeof(f->tail) ? (size_t)f->offset : sizeof(f->tail);
	if (pread(f->fd, f->tail, f->tail_len, f->offset - (off_t)f->tail_len) != (ssize_t)f->tail_len)
		f->tail_len = 0;
	return 0;
}

/* The file to read next and its size; -1: nothing new. */
static int current(struct audit_follow *f, off_t *size)
{
	struct stat st;
	for (int round = 0; round < 4; round++) {
		if (f->in_old) {
			if (fstat(f->old_fd, &st) != 0 || !tail_matches(f, f->old_fd)) {
				f->gaps++; /* rotated again meanwhile */
				to_new_generation(f);
			} else if (st.st_size <= f->offset) {
				to_new_generation(f);
			} else {
				*size = st.st_size;
				return f->old_fd;
			}
			continue;
		}
		if (fstat(f->fd, &st) != 0)
			return -1;
		if (st.st_size >= f->offset && tail_matches(f, f->fd)) {
			*size = st.st_size;
			return st.st_size > f->offset ? f->fd : -1;
		}
		/* Rotated: what we had not read went to FILE.1, after the same bytes. */
		char old[sizeof(f->path) + 2];
		snprintf(old, sizeof(old), "%s.1", f->path);
		f->old_fd = open(old, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (f->old_fd >= 0 && tail_matches(f, f->old_fd)) {
			f->in_old = true;
		} else {
			f->gaps++;
			to_new_generation(f);
		}
	}
	return -1;
}

size_t audit_follow_read(struct audit_follow *f, size_t budget, unsigned max_lines,
			 bool (*line)(void *arg, const char *text, size_t len), void *arg)
{
	static char buf[CHUNK];
	size_t done = 0;
	unsigned taken = 0;
	while (f->fd >= 0 && done < budget && taken < max_lines) {
		off_t size;
		int fd = current(f, &size);
		if (fd < 0)
			break;
		size_t want = (size_t)(size - f->offset);
		want = want < CHUNK ? want : CHUNK;
		want = want < budget - done ? want : budget - done;
		ssize_t n = pread(fd, buf, want, f->offset);
		if (n <= 0)
			break;
		size_t used = 0;
		for (char *nl; taken < max_lines && (nl = memchr(buf + used, '\n', (size_t)n - used));) {
			size_t len = (size_t)(nl - (buf + used));
			if (!f->skipping && len <= AUDIT_FOLLOW_LINE_MAX && line(arg, buf + used, len))
				taken++;
			f->skipping = false;
			used += len + 1;
		}
		if (!used) {
			bool at_end = f->offset + n >= size;
			if (at_end && fd == f->old_fd) {
				to_new_generation(f); /* FILE.1 ends in a torn line: on to FILE */
				continue;
			}
			if (at_end || n < CHUNK)
				break; /* a line still being written, or no budget left for it */
			f->skipping = true; /* a whole chunk without a line end: overlong */
			used = (size_t)n;
		}
		advance(f, buf, used);
		done += used;
	}
	return done;
}

void audit_follow_close(struct audit_follow *f)
{
	if (f->fd >= 0)
		close(f->fd);
	if (f->old_fd >= 0)
		close(f->old_fd);
	f->fd = f->old_fd = -1;
}
