/* probe_cache.c — one cache record per host shape: the bwrap binary, the
 * kernel and its userns/LSM settings, and whether the sandbox is started
 * by root or an unprivileged uid (never which one); an flock serialises
 * probers; unusable answers expire after SBX_PROBE_UNUSABLE_TTL seconds. */
#include "probe_cache.h"
#include "program_path.h"
#include "atomic_file.h"
#include "bwrap.h"
#include "clock.h"
#include "datadir.h"
#include "diag.h"
#include "fnv.h"
#include "io.h"
#include "json.h"
#include "probe.h"
#include "probe_as.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define CACHE_RECORD_CAP (1u << 20)

/* The first line of a small /proc or /sys file, "" when unreadable. */
static json_t *first_line(const char *path)
{
	char buf[512] = "";
	FILE *f = fopen(path, "re");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
	return json_string(buf);
}

/* Who the sandbox starts as, as far as bwrap can tell: root, or some
 * unprivileged uid (every uid of the range behaves alike). */
static const char *caller_class(const struct sbx_probe_request *req)
{
	return geteuid() != 0 || (req->as && req->as->switch_user) ? "user" : "root";
}

/* What the answer depends on: the bwrap binary (a new install or a touch
 * changes it), the kernel, the sysctls and LSMs that gate user namespaces,
 * and the caller's class. */
static json_t *cache_key(const struct sbx_probe_request *req)
{
	const char *requested = sbx_bwrap_requested(req->bwrap);
	char path[PATH_MAX];
	struct stat st;
	struct utsname u;
	json_t *key;

	if (!sbx_find_executable(requested, path, sizeof(path)) || stat(path, &st) != 0)
		key = json_pack("{s:s}", "missing", requested);
	else
		/* Every number below 2^53, so the record survives tools (jq) that
		 * read JSON numbers as doubles. */
		key = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I}", "path", path, "dev", (json_int_t)st.st_dev,
				"ino", (json_int_t)st.st_ino, "size", (json_int_t)st.st_size,
				"mtime", (json_int_t)st.st_mtim.tv_sec, "mtimeNsec", (json_int_t)st.st_mtim.tv_nsec);
	if (uname(&u) == 0)
		json_object_set_new(key, "kernel", json_pack("{s:s,s:s,s:s}", "release", u.release,
							     "version", u.version, "machine", u.machine));
	json_object_set_new(key, "userns", json_pack("{s:o,s:o,s:o,s:o}",
		"unprivilegedClone", first_line("/proc/sys/kernel/unprivileged_userns_clone"),
		"maxUserNamespaces", first_line("/proc/sys/user/max_user_namespaces"),
		"apparmorRestrict", first_line("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
		"lsm", first_line("/sys/kernel/security/lsm")));
	json_object_set_new(key, "caller", json_string(caller_class(req)));
	return key;
}

static int resolve_dir(const struct sbx_probe_request *req, char *out, size_t size)
{
	char data[PATH_MAX];

	if (req->cache_dir)
		return snprintf(out, size, "%s", req->cache_dir) < (int)size ? 0 : -1;
	if (sbx_data_dir(data, sizeof(data)) != 0)
		return -1;
	return sbx_data_path(data, SBX_DATA_CACHE, NULL, out, size);
}

/* The record file for a key: probe-<caller>-<FNV-1a of the bwrap path>. */
static int record_path(const char *dir, const json_t *key, char *out, size_t size)
{
	const char *who = sbx_json_string_or(key, "path", sbx_json_string_or(key, "missing", ""));
	unsigned long long digest = sbx_fnv1a64(SBX_FNV_INIT, who, strlen(who));

	/* The name only spreads records; the stored key is compared in full. */
	int n = snprintf(out, size, "%s/probe-%s-%016llx.json", dir, sbx_json_string_or(key, "caller", "user"), digest);
	return n > 0 && (size_t)n < size ? 0 : -1;
}

/* A record is trusted only when we own it and nobody else can write it:
 * a planted "usable" answer would otherwise steer every launch. */
static json_t *read_record(const char *path)
{
	struct sbx_error e;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		close(fd);
		sbx_diag("warning", "probe-cache-untrusted", "Remove the file; sbx recreates it.",
			 "%s: not a regular file owned by uid %u and writable only by it; ignored",
			 path, (unsigned)geteuid());
		return NULL;
	}
	size_t len;
	char *buf = sbx_read_fd_capped(fd, CACHE_RECORD_CAP, &len, path, &e);
	close(fd);
	if (!buf)
		return NULL;
	json_t *record = sbx_json_parse(buf, len, path, &e);
	free(buf);
	return record;
}

/* The cached answer when the record matches the key and has not expired. */
static json_t *fresh_answer(const char *path, const json_t *key)
{
	struct sbx_sandbox_profile profile;
	json_t *record = read_record(path);
	json_t *answer = json_object_get(record, "result");
	json_int_t probed = json_integer_value(json_object_get(record, "probedAtEpoch"));

	if (!record || !json_is_object(answer) || !json_equal(json_object_get(record, "key"), (json_t *)key) ||
	    sbx_probe_profile(answer, &profile) != 0) {
		json_decref(record);
		return NULL;
	}
	time_t now = time(NULL);
	if (!profile.usable && (now - probed >= SBX_PROBE_UNUSABLE_TTL || now < probed)) {
		json_decref(record);
		return NULL;
	}
	json_incref(answer);
	json_decref(record);
	return answer;
}

static void store(const char *path, json_t *key, const struct sbx_probe_result *r, json_t *answer)
{
	struct sbx_error e;
	json_t *record = json_pack("{s:i,s:O,s:I,s:O}", "version", 1, "key", key,
				   "probedAtEpoch", (json_int_t)r->probed_at, "result", answer);
	char *text = json_dumps(record, JSON_COMPACT);

	if (text && sbx_atomic_write(path, text, strlen(text), 0600, &e) != 0)
		sbx_diag("warning", "probe-cache-write", NULL, "%s", e.message);
	free(text);
	json_decref(record);
}

static json_t *probe_now(const struct sbx_probe_request *req, struct sbx_probe_result *r, bool *trusted)
{
	bool ignored;
	return sbx_probe_json_as(req->as, sbx_bwrap_requested(req->bwrap), req->timeout_ms, r, trusted ? trusted : &ignored);
}

static json_t *mark(json_t *answer, bool cached)
{
	json_object_set_new(answer, "cached", json_boolean(cached));
	return answer;
}

/* flock(LOCK_EX) within ms: the prober holding it is bounded by its own
 * deadline, so its waiters are too. Polled with a backoff of 1 to 50 ms
 * (flock has no timed wait, and an alarm is no tool in a threaded daemon). */
static int lock_within(int fd, int ms)
{
	long long deadline = sbx_mono_ms() + ms;
	long step_us = 1000;
	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (sbx_mono_ms() >= deadline)
			return -1;
		usleep((useconds_t)step_us);
		if (step_us < 50000)
			step_us *= 2;
	}
	return 0;
}

json_t *sbx_probe(const struct sbx_probe_request *req)
{
	struct sbx_probe_result r;
	struct sbx_error e;
	char dir[PATH_MAX], path[PATH_MAX], lock_path[PATH_MAX + 8];

	if (req->cache_dir && !*req->cache_dir)
		return mark(probe_now(req, &r, NULL), false);
	sbx_error_set(&e, 0, "", "cache directory path too long");
	if (resolve_dir(req, dir, sizeof(dir)) != 0 || sbx_mkdir_p(dir, 0700, &e) != 0) {
		sbx_diag("warning", "probe-cache-unavailable", "Pass --cache-dir or set SBX_DATA_DIR.",
			 "probe cache directory unusable (%s); probing without a cache", e.message);
		return mark(probe_now(req, &r, NULL), false);
	}

	json_t *key = cache_key(req);
	json_t *answer = NULL;
	if (record_path(dir, key, path, sizeof(path)) != 0) {
		json_decref(key);
		return mark(probe_now(req, &r, NULL), false);
	}
	if (!req->refresh && (answer = fresh_answer(path, key))) {
		json_decref(key);
		return mark(answer, true);
	}

	/* One prober at a time per record; a waiter then finds the new answer. */
	snprintf(lock_path, sizeof(lock_path), "%s.lock", path);
	int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lock >= 0 && lock_within(lock, 6 * (req->timeout_ms > 0 ? req->timeout_ms : SBX_PROBE_TIMEOUT_MS)) != 0) {
		/* A holder past every deadline a prober has (stopped, or
		 * hung in the kernel): probe without it, as with no lock. */
		close(lock);
		lock = -1;
	}
	if (!req->refresh && (answer = fresh_answer(path, key))) {
		mark(answer, true);
	} else {
		bool trusted;
		answer = mark(probe_now(req, &r, &trusted), false);
		if (trusted) /* a child that was killed or stalled never speaks for every uid */
			store(path, key, &r, answer);
	}
	if (lock >= 0)
		close(lock);
	json_decref(key);
	return answer;
}
