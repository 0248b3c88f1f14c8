/* stamp.c — a package is hashed once: then <store>/.verified/<id> (0600,
 * ours) records a fingerprint of every entry's identity and ctime, and a
 * later check that finds the same fingerprint needs no hashing. */
#include "skills.h"
#include "../lib/beneath.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/snap_scan.h"
#include "../lib/uuid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STAMP_CAP 4096
#define SETTLE_TRIES 100 /* 1 ms each: a coarse filesystem clock ticks within it */

/* What changes whenever anything in the package changes: every entry's
 * type, size, device, inode and ctime, and its path (the root's too). A
 * write, chmod, rename, link or unlink sets the ctime to the clock's now,
 * which a stamp never trusts (see settle). The newest ctime in *newest. */
static int fingerprint(int pkg, char out[SBX_SHA256_HEX_LEN + 1], int64_t *newest)
{
	struct sbx_snap_scan scan = { 0 };
	struct sbx_error e;
	struct stat st;
	char line[80];
	if (fstat(pkg, &st) != 0 || sbx_snap_scan_at(pkg, &scan, &e) != 0)
		return -1;
	struct sbx_sha256 *h = sbx_sha256_new();
	if (!h) {
		sbx_snap_scan_free(&scan);
		return -1;
	}
	*newest = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	int n = snprintf(line, sizeof(line), "d 0 %ju %ju %jd 1:.\n", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino, (intmax_t)*newest);
	sbx_sha256_update(h, line, (size_t)n);
	for (size_t i = 0; i < scan.len; i++) {
		const struct sbx_snap_entry *x = &scan.v[i];
		n = snprintf(line, sizeof(line), "%c %d %ju %ju %ju %jd %zu:", x->type, x->exec, (uintmax_t)x->size,
			     (uintmax_t)x->dev, (uintmax_t)x->ino, (intmax_t)x->ctime_ns, strlen(x->path));
		sbx_sha256_update(h, line, (size_t)n);
		sbx_sha256_update(h, x->path, strlen(x->path));
		sbx_sha256_update(h, "\n", 1);
		if (x->ctime_ns > *newest)
			*newest = x->ctime_ns;
	}
	sbx_snap_scan_free(&scan);
	sbx_sha256_final(h, out);
	return 0;
}

/* <store>/.verified, ours and writable by nobody else (made 0700 when
 * create); -1 when it is missing or anyone else could write a stamp. */
static int stamps_dir(const struct store *s, bool create)
{
	struct stat st;
	if (s->fd < 0)
		return -1;
	int fd = sbx_beneath_step(s->fd, SKILLS_STAMPS, create);
	if (fd >= 0 && create && fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 077))
		fchmod(fd, 0700);
	if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The fingerprint id's stamp records, into want; -1 without a stamp we
 * can trust (ours, regular, not writable by others, small, for id). */
static int stamp_read(const struct store *s, const char *id, char want[SBX_SHA256_HEX_LEN + 1])
{
	int dir = stamps_dir(s, false);
	int fd = dir < 0 ? -1 : openat(dir, id, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	struct sbx_error e;
	json_t *doc = NULL;
	char *text = NULL;
	size_t len;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022) &&
	    (text = sbx_read_fd_capped(fd, STAMP_CAP, &len, "stamp", &e)))
		doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	free(text);
	if (fd >= 0)
		close(fd);
	if (dir >= 0)
		close(dir);
	const char *sid = json_string_value(json_object_get(doc, "id"));
	const char *fp = json_string_value(json_object_get(doc, "fingerprint"));
	int rc = sid && fp && !strcmp(sid, id) && strlen(fp) == SBX_SHA256_HEX_LEN ? 0 : -1;
	if (rc == 0)
		memcpy(want, fp, SBX_SHA256_HEX_LEN + 1);
	json_decref(doc);
	return rc;
}

static void stamp_write(int dir, const char *id, const char *fp, int64_t settled)
{
	char tmp[SBX_SHA256_HEX_LEN + 64], uuid[40];
	sbx_uuid4("", uuid, sizeof(uuid));
	snprintf(tmp, sizeof(tmp), "%s.tmp-%.8s", id, uuid);
	json_t *v = json_pack("{s:s,s:s,s:I}", "id", id, "fingerprint", fp, "settledNs", (json_int_t)settled);
	char *text = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(v);
	int fd = text ? openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
	/* No fsync: a stamp lost in a crash costs one hashing, never a pass. */
	bool ok = fd >= 0 && sbx_write_all(fd, text, strlen(text)) == 0;
	if (fd >= 0)
		close(fd);
	if (fd >= 0 && (!ok || renameat(dir, tmp, dir, id) != 0))
		unlinkat(dir, tmp, 0);
	free(text);
}

/* The filesystem's own clock, in its own granularity: the ctime a file of
 * the stamps directory gets when touched now (-1 when there is none). */
static int64_t fs_now(int probe)
{
	struct stat st;
	if (probe < 0 || futimens(probe, NULL) != 0 || fstat(probe, &st) != 0)
		return -1;
	return (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
}

/* Waits (at most SETTLE_TRIES ms) until the filesystem's clock is past
 * newest, and returns that time: any change made from then on gets a
 * ctime later than every ctime a fingerprint taken now records. */
static int64_t settle(int dir, int64_t newest)
{
	char name[80], uuid[40];
	int probe = dir < 0 ? -1 : openat(dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (dir >= 0 && probe < 0) {
		sbx_uuid4("", uuid, sizeof(uuid));
		snprintf(name, sizeof(name), ".clock-%.8s", uuid);
		probe = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (probe >= 0)
			unlinkat(dir, name, 0);
	}
	int64_t now = fs_now(probe);
	for (int i = 0; now >= 0 && now <= newest && i < SETTLE_TRIES; i++) {
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
		now = fs_now(probe);
	}
	if (probe >= 0)
		close(probe);
	return now;
}

bool stamp_valid(const struct store *s, const char *id, int pkg)
{
	char fp[SBX_SHA256_HEX_LEN + 1], want[SBX_SHA256_HEX_LEN + 1];
	int64_t newest;
	return fingerprint(pkg, fp, &newest) == 0 && stamp_read(s, id, want) == 0 && !strcmp(fp, want);
}

void stamp_remove(const struct store *s, const char *id)
{
	int dir = stamps_dir(s, false);
	if (dir >= 0) {
		unlinkat(dir, id, 0);
		close(dir);
	}
}

int stamp_verify(const struct store *s, const char *id, int pkg, enum verified *how, struct sbx_error *e)
{
	char fp[SBX_SHA256_HEX_LEN + 1], again[SBX_SHA256_HEX_LEN + 1];
	int64_t newest = 0, latest = 0;
	if (stamp_valid(s, id, pkg)) {
		*how = VERIFIED_STAMP;
		return 0;
	}
	/* Hashed between two fingerprints taken after the clock settled: a
	 * stamp only when nothing changed from before the first to after the
	 * second, and nothing had a ctime the clock could give again. */
	int dir = stamps_dir(s, true);
	bool before = fingerprint(pkg, fp, &newest) == 0;
	int64_t settled = before ? settle(dir, newest) : -1;
	before = before && fingerprint(pkg, fp, &newest) == 0 && settled > newest;
	if (!verify_hashes(pkg, id)) {
		if (dir >= 0) {
			unlinkat(dir, id, 0);
			close(dir);
		}
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "integrity", "skill package %s failed its integrity check", id);
		sbx_error_remedy(e, "put the package again: its genuine bundle replaces the held copy");
		return -1;
	}
	if (dir >= 0 && before && fingerprint(pkg, again, &latest) == 0 && !strcmp(fp, again))
		stamp_write(dir, id, fp, settled);
	if (dir >= 0)
		close(dir);
	*how = VERIFIED_HASHED;
	return 0;
}
