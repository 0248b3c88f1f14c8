/* audit_follow.h — following a JSON-lines log that its writer rotates by
 * copying it to FILE.1 and emptying it: whole lines from where we were,
 * a bounded amount per call, never blocking. */
#ifndef SBX_RUN_AUDIT_FOLLOW_H
#define SBX_RUN_AUDIT_FOLLOW_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define AUDIT_FOLLOW_TICK_BYTES (256 * 1024) /* read per call at most */
#define AUDIT_FOLLOW_LINE_MAX 16384          /* longer lines are skipped */

struct audit_follow {
	int fd, old_fd;        /* FILE and, after a rotation, FILE.1 */
	char path[PATH_MAX + 64];
	off_t offset;          /* the next unread byte (in FILE.1 while in_old) */
	bool in_old, skipping; /* skipping: the rest of an overlong line */
	char tail[64];         /* the bytes before offset: a rotation shows as their change */
	size_t tail_len;
	unsigned long long gaps; /* rotations whose unread lines were lost */
};

/* Opens path and starts at its end; -1 with errno. */
int audit_follow_open(struct audit_follow *f, const char *path);
/* Calls line for each new whole line (without its newline), up to budget
 * bytes and until line has returned true max_lines times; the bytes
 * consumed (0: nothing new). */
size_t audit_follow_read(struct audit_follow *f, size_t budget, unsigned max_lines,
			 bool (*line)(void *arg, const char *text, size_t len), void *arg);
void audit_follow_close(struct audit_follow *f);

#endif
