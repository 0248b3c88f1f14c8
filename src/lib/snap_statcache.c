/* snap_statcache.c — the stat cache as fixed binary records in scan order
 * (header with a SHA-256 of the rest, then record + path + symlink target
 * per entry), matched against a new scan by one forward walk: no parsing,
 * no per-entry allocation. Racily clean files are hashed again. */
#include "snap_statcache.h"
#include "atomic_file.h"
#include "hash.h"
#include "io.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "SBXSTAT3"
#define CACHE_MAX (1u << 30)

struct header {
	char magic[8];
	uint64_t count;
	uint8_t has_manifest, pad[7];
	uint8_t manifest[32];
	char body_sha256[SBX_SHA256_HEX_LEN]; /* of everything after the header */
};

struct record {
	uint64_t dev, ino, size;
	int64_t mtime_ns, ctime_ns;
	uint32_t path_len, target_len;
	uint8_t type, exec, has_digest, pad[5];
	uint8_t digest[32];
};

static int hex_value(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "sha256:<64 lower-case hex>" to 32 bytes; false when it is not one. */
static bool digest_raw(const char *digest, uint8_t raw[32])
{
	if (strncmp(digest, "sha256:", 7) != 0)
		return false;
	for (int i = 0; i < 32; i++) {
		int hi = hex_value(digest[7 + 2 * i]), lo = hi < 0 ? -1 : hex_value(digest[8 + 2 * i]);
		if (lo < 0)
			return false;
		raw[i] = (uint8_t)(hi << 4 | lo);
	}
	return digest[71] == '\0';
}

static void digest_text(const uint8_t raw[32], char out[72])
{
	static const char hex[] = "0123456789abcdef";
	memcpy(out, "sha256:", 7);
	for (int i = 0; i < 32; i++) {
		out[7 + 2 * i] = hex[raw[i] >> 4];
		out[8 + 2 * i] = hex[raw[i] & 15];
	}
	out[71] = '\0';
}

void sbx_statcache_load(const char *path, struct sbx_statcache *c)
{
	struct sbx_error ignored;
	struct header h;

	memset(c, 0, sizeof(*c));
	struct stat st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		c->written_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		c->buf = sbx_read_fd_capped(fd, CACHE_MAX, &c->len, "stat cache", &ignored);
	}
	if (fd >= 0)
		close(fd);
	if (c->buf && c->len >= sizeof(h)) {
		memcpy(&h, c->buf, sizeof(h));
		char sum[SBX_SHA256_HEX_LEN + 1];
		sbx_sha256_hex(c->buf + sizeof(h), c->len - sizeof(h), sum);
		/* A damaged cache vouches for nothing (a flipped digest would name
		 * an object the store never had). */
		if (!memcmp(h.magic, MAGIC, 8) && !memcmp(h.body_sha256, sum, SBX_SHA256_HEX_LEN)) {
			c->pos = sizeof(h);
			c->count = h.count;
			c->has_manifest = h.has_manifest == 1;
			if (c->has_manifest)
				digest_text(h.manifest, c->manifest);
			c->same = true;
			return;
		}
	}
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

/* The record at c->pos, its path and target; false past the end or where
 * the file is damaged (the walk then ends there). */
static bool record_at(const struct sbx_statcache *c, struct record *r, const char **path, const char **target)
{
	if (!c->buf || c->pos > c->len || c->len - c->pos < sizeof(*r))
		return false;
	memcpy(r, c->buf + c->pos, sizeof(*r));
	size_t rest = c->len - c->pos - sizeof(*r);
	if (r->path_len == 0 || r->path_len > rest || r->target_len > rest - r->path_len)
		return false;
	*path = c->buf + c->pos + sizeof(*r);
	*target = *path + r->path_len;
	return true;
}

/* strcmp's order (the scan's) between a counted path and a string. */
static int path_order(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b), n = alen < blen ? alen : blen;
	int cmp = memcmp(a, b, n);
	return cmp ? cmp : alen < blen ? -1 : alen > blen ? 1 : 0;
}

static bool same_facts(const struct record *r, const char *target, const struct sbx_snap_entry *x, int64_t written_ns)
{
	if (r->type != (uint8_t)x->type || r->dev != x->dev || r->ino != x->ino || r->mtime_ns != x->mtime_ns ||
	    r->ctime_ns != x->ctime_ns)
		return false;
	/* Racily clean (git's rule): changed no earlier than the cache was
	 * written, a rewrite within the timestamps' granularity (a second on
	 * some filesystems) could hide behind equal facts. Hashed again. */
	if (x->type == SBX_ENTRY_FILE)
		return r->size == x->size && r->exec == (uint8_t)x->exec && r->has_digest == 1 &&
		       r->mtime_ns < written_ns && r->ctime_ns < written_ns;
	if (x->type == SBX_ENTRY_SYMLINK)
		return x->target && strlen(x->target) == r->target_len && !memcmp(target, x->target, r->target_len);
	return true;
}

bool sbx_statcache_match(struct sbx_statcache *c, struct sbx_snap_entry *x)
{
	struct record r;
	const char *path, *target;
	bool skipped = false;

	while (record_at(c, &r, &path, &target)) {
		int cmp = path_order(path, r.path_len, x->path);
		if (cmp > 0)
			break;
		c->pos += sizeof(r) + r.path_len + r.target_len;
		c->seen++;
		if (cmp < 0) {
			skipped = true; /* an entry gone since */
			continue;
		}
		bool same = same_facts(&r, target, x, c->written_ns);
		c->same = c->same && same && !skipped;
		if (same && x->type == SBX_ENTRY_FILE) {
			digest_text(r.digest, x->digest);
			return true;
		}
		return false;
	}
	c->same = false; /* an entry the last commit did not have */
	return false;
}

const char *sbx_statcache_manifest(const struct sbx_statcache *c, size_t entries)
{
	return c->same && c->has_manifest && c->seen == c->count && c->count == entries ? c->manifest : NULL;
}

void sbx_statcache_save(const char *path, const struct sbx_snap_scan *s, const char *manifest)
{
	struct sbx_error ignored;
	struct header h = { .count = s->len };
	size_t len = sizeof(h);

	memcpy(h.magic, MAGIC, 8);
	h.has_manifest = manifest && digest_raw(manifest, h.manifest);
	for (size_t i = 0; i < s->len; i++)
		len += sizeof(struct record) + strlen(s->v[i].path) + (s->v[i].target ? strlen(s->v[i].target) : 0);
	char *out = malloc(len), *p = out;
	if (!out)
		return;
	memcpy(p, &h, sizeof(h));
	p += sizeof(h);
	for (size_t i = 0; i < s->len; i++) {
		const struct sbx_snap_entry *x = &s->v[i];
		size_t plen = strlen(x->path), tlen = x->target ? strlen(x->target) : 0;
		struct record r = { .dev = x->dev, .ino = x->ino, .size = x->size, .mtime_ns = x->mtime_ns,
				    .ctime_ns = x->ctime_ns, .path_len = (uint32_t)plen, .target_len = (uint32_t)tlen,
				    .type = (uint8_t)x->type, .exec = x->exec };
		r.has_digest = x->type == SBX_ENTRY_FILE && digest_raw(x->digest, r.digest);
		memcpy(p, &r, sizeof(r));
		memcpy(p + sizeof(r), x->path, plen);
		if (tlen)
			memcpy(p + sizeof(r) + plen, x->target, tlen);
		p += sizeof(r) + plen + tlen;
	}
	char sum[SBX_SHA256_HEX_LEN + 1];
	sbx_sha256_hex(out + sizeof(h), len - sizeof(h), sum);
	memcpy(out + offsetof(struct header, body_sha256), sum, SBX_SHA256_HEX_LEN);
	/* A cache: written after the objects it vouches for were synced,
	 * self-checking (magic, body digest), so a power cut can only lose
	 * it (a rehash), never make it lie. No fsync. */
	sbx_atomic_replace(path, out, len, 0600, false, &ignored);
	free(out);
}

void sbx_statcache_free(struct sbx_statcache *c)
{
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

bool sbx_statcache_manifest_of(const char *path, char out[72])
{
	struct header h;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	ssize_t n = fd >= 0 ? pread(fd, &h, sizeof(h), 0) : -1;
	if (fd >= 0)
		close(fd);
	if (n != (ssize_t)sizeof(h) || memcmp(h.magic, MAGIC, 8) != 0 || h.has_manifest != 1)
		return false;
	digest_text(h.manifest, out);
	return true;
}
