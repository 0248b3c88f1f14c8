/* secret_store.c — the secret store's directory (0700, ours, no symlink)
 * and its NAME.json files (0600, atomic, read capped with O_NOFOLLOW);
 * values live on locked, undumpable pages and are cleansed when freed. */
#include "secret_store.h"
#include "atomic_file.h"
#include "exitcodes.h"
#include "json.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

bool sbx_secret_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > 63 || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')))
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

static size_t pages(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return (size + page - 1) / page * page;
}

char *sbx_secret_buffer(size_t size)
{
	size_t len = pages(size);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* Best effort: out of a core dump always, out of swap where the
	 * memlock limit allows. */
	madvise(p, len, MADV_DONTDUMP);
	(void)mlock(p, len);
	return p;
}

void sbx_secret_buffer_free(char *p, size_t size)
{
	if (!p)
		return;
	size_t len = pages(size);
	OPENSSL_cleanse(p, len);
	munlock(p, len);
	munmap(p, len);
}

char *sbx_secret_read_fd(int fd, size_t cap, size_t *len, const char *what, struct sbx_error *e)
{
	char *buf = sbx_secret_buffer(cap + 2);
	size_t n = 0;
	if (!buf) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "%s: out of memory", what);
		return NULL;
	}
	for (;;) {
		ssize_t got = read(fd, buf + n, cap + 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			sbx_error_set(e, SBX_EXIT_USAGE, "read-failed", "%s: cannot read: %s", what, strerror(errno));
			break;
		}
		if (got == 0) {
			buf[n] = '\0';
			*len = n;
			return buf;
		}
		n += (size_t)got;
		if (n > cap) {
			sbx_error_set(e, SBX_EXIT_USAGE, "too-large", "%s: more than %zu bytes", what, cap);
			break;
		}
	}
	sbx_secret_buffer_free(buf, cap + 2);
	return NULL;
}

/* jansson's copies of a value (its lexer's buffer, its strings) are
 * cleansed when jansson frees them. */
static void cleansing_free(void *p)
{
	if (p)
		OPENSSL_cleanse(p, malloc_usable_size(p));
	free(p);
}

void sbx_secret_json_cleansing(void)
{
	json_set_alloc_funcs(malloc, cleansing_free);
}

int sbx_secret_set_value(struct sbx_secret *s, const char *value, size_t len, struct sbx_error *e)
{
	sbx_secret_free(s);
	if (len == 0 || len > SBX_SECRET_VALUE_MAX) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-value", "value: 1 to %d bytes, not %zu", SBX_SECRET_VALUE_MAX, len);
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)value[i] < 0x20 || (unsigned char)value[i] > 0x7e) {
			/* The byte's position, never the byte: diagnostics never hold a value. */
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-value",
				      "value: byte %zu is not printable ASCII (0x20-0x7e): a value goes into an HTTP header, so no CR, LF, NUL or other control", i + 1);
			return -1;
		}
	if (!(s->value = sbx_secret_buffer(len + 1))) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "value: out of memory");
		return -1;
	}
	memcpy(s->value, value, len);
	s->value[len] = '\0';
	s->value_len = len;
	return 0;
}

void sbx_secret_free(struct sbx_secret *s)
{
	if (s->value)
		sbx_secret_buffer_free(s->value, s->value_len + 1);
	s->value = NULL;
	s->value_len = 0;
}

int sbx_secret_store_open(const char *dir, bool create, struct sbx_error *e)
{
	struct stat st;
	if (create && sbx_mkdir_p(dir, 0700, e) != 0)
		return -1;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && !create) {
		sbx_error_set(e, SBX_EXIT_USAGE, "no-store", "%s: no secret store here", dir);
		return SBX_SECRET_NO_STORE;
	}
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR) && lstat(dir, &st) == 0 && S_ISLNK(st.st_mode)) {
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "unsafe-store", "%s: the secret store must not be a symbolic link", dir);
		return -1;
	}
	if (fd < 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-store", "%s: %s", dir, strerror(errno));
		return -1;
	}
	const char *why = fstat(fd, &st) != 0                  ? "cannot be examined"
			  : st.st_uid != geteuid()             ? "is owned by another user"
			  : (st.st_mode & 077)                 ? "may be read or entered by its group or others (chmod 700 it)"
							       : NULL;
	if (why) {
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "unsafe-store", "%s: the secret store %s", dir, why);
		close(fd);
		return -1;
	}
	return fd;
}

static void file_of(const char *name, char out[80])
{
	snprintf(out, 80, "%s.json", name);
}

static int unknown(const char *name, struct sbx_error *e)
{
	sbx_error_set(e, SBX_EXIT_USAGE, "unknown-secret", "unknown secret %s", name);
	return SBX_SECRET_UNKNOWN;
}

int sbx_secret_load(int dirfd, const char *name, bool with_value, struct sbx_secret *s, struct sbx_error *e)
{
	char file[80];
	struct stat st;
	size_t len;
	memset(s, 0, sizeof(*s));
	if (!sbx_secret_name_ok(name))
		return unknown(name, e);
	file_of(name, file);
	int fd = openat(dirfd, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return unknown(name, e);
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "bad-secret-file", "secret %s: %s is %s", name, file,
			      fd < 0 && errno == ELOOP ? "a symbolic link" : fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	char *text = sbx_secret_read_fd(fd, SBX_SECRET_FILE_MAX, &len, file, e);
	close(fd);
	if (!text)
		return -1;
	json_t *doc = sbx_json_parse(text, len, file, e);
	sbx_secret_buffer_free(text, SBX_SECRET_FILE_MAX + 2);
	int rc = !doc ? -1 : with_value ? sbx_secret_from_json(doc, s, e) : sbx_secret_from_json_meta(doc, s, e);
	json_t *v = json_object_get(doc, "value");
	if (json_is_string(v))
		OPENSSL_cleanse((char *)json_string_value(v), json_string_length(v));
	json_decref(doc);
	if (rc == 0 && strcmp(s->name, name) != 0) {
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "bad-secret-file", "%s: holds secret %s", file, s->name);
		rc = -1;
	}
	if (rc != 0) {
		sbx_error_prefix(e, file);
		sbx_secret_free(s);
		e->exit_code = e->exit_code == SBX_EXIT_USAGE ? SBX_EXIT_INTEGRITY : e->exit_code;
	}
	return rc;
}

int sbx_secret_save(int dirfd, const struct sbx_secret *s, struct sbx_error *e)
{
	char file[80];
	if (!s->value) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "no-value", "secret %s: saved without a value", s->name);
		return -1;
	}
	json_t *doc = sbx_secret_meta(s);
	json_t *value = json_stringn(s->value, s->value_len);
	json_object_set_new(doc, "value", value);
	char *text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	OPENSSL_cleanse((char *)json_string_value(value), s->value_len);
	json_decref(doc);
	if (!text) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "secret %s: out of memory", s->name);
		return -1;
	}
	file_of(s->name, file);
	size_t len = strlen(text);
	int rc = sbx_atomic_write_at(dirfd, file, text, len, 0600, e);
	OPENSSL_cleanse(text, len);
	free(text);
	return rc;
}

int sbx_secret_remove(int dirfd, const char *name, struct sbx_error *e)
{
	char file[80];
	struct stat st;
	if (!sbx_secret_name_ok(name))
		return unknown(name, e);
	file_of(name, file);
	if (fstatat(dirfd, file, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
		return unknown(name, e);
	if (unlinkat(dirfd, file, 0) != 0) {
		if (errno == ENOENT)
			return unknown(name, e);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "remove-failed", "secret %s: %s", name, strerror(errno));
		return -1;
	}
	fsync(dirfd);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void sbx_secret_names_free(char **names, int n)
{
	for (int i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

int sbx_secret_list(int dirfd, char ***names, struct sbx_error *e)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	char **out = calloc(SBX_SECRET_LIST_MAX, sizeof(*out));
	int n = 0;
	struct dirent *de;
	if (!d || !out) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "list-failed", "the secret store cannot be listed: %s", strerror(errno));
		if (d)
			closedir(d);
		else if (fd >= 0)
			close(fd);
		free(out);
		return -1;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char stem[80];
		if (len <= 5 || len - 5 >= sizeof(stem) || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(stem, sizeof(stem), "%.*s", (int)(len - 5), de->d_name);
		if (!sbx_secret_name_ok(stem))
			continue;
		if (n == SBX_SECRET_LIST_MAX) {
			sbx_error_set(e, SBX_EXIT_INTEGRITY, "too-many-secrets", "the secret store holds more than %d secrets",
				      SBX_SECRET_LIST_MAX);
			closedir(d);
			sbx_secret_names_free(out, n);
			return -1;
		}
		if (!(out[n] = strdup(stem)))
			break;
		n++;
	}
	closedir(d);
	qsort(out, (size_t)n, sizeof(*out), by_name);
	*names = out;
	return n;
}
