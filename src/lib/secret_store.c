/* secret_store.c — the secret store's directory (0700, ours, no symlink),
 * its NAME.json files (0600, atomic, read capped with O_NOFOLLOW) and
 * their fields, each checked by name; and where a secret may be sent. */
#include "secret_store.h"
#include "atomic_file.h"
#include "egress_policy.h"
#include "exitcodes.h"
#include "json.h"
#include "launch_env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool sbx_secret_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > 63 || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')))
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

int sbx_secret_set_value(struct sbx_secret *s, const char *value, size_t len, struct sbx_error *e)
{
	sbx_secret_free(s);
	/* Short values could not be told from other text where the gateway
	 * masks them in what a host sends back. */
	if (len < SBX_SECRET_VALUE_MIN || len > SBX_SECRET_VALUE_MAX) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-value", "value: %d to %d bytes, not %zu", SBX_SECRET_VALUE_MIN,
			      SBX_SECRET_VALUE_MAX, len);
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

/* The fields. */

static int bad(struct sbx_error *e, const char *field, const char *why)
{
	sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "%s: %s", field, why);
	return -1;
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

/* Headers a gateway sets or the framing depends on: never a secret's. */
static const char *const refused_headers[] = {
	"host", "content-length", "transfer-encoding", "connection", "keep-alive", "te", "trailer", "upgrade",
	"proxy-authorization", "proxy-authenticate", "proxy-connection", "expect", NULL,
};

/* "NAME: FORMAT": NAME an RFC 7230 token (lower-cased), FORMAT printable
 * ASCII holding "{}" exactly once (white space after the colon dropped). */
static int parse_header(const char *text, struct sbx_secret *s, struct sbx_error *e)
{
	const char *colon = strchr(text, ':');
	size_t n = colon ? (size_t)(colon - text) : 0;
	if (!colon || n == 0 || n >= sizeof(s->header_name))
		return bad(e, "header", "must be \"NAME: FORMAT\" with a header name of 1 to 63 characters");
	for (size_t i = 0; i < n; i++) {
		char c = text[i];
		if (!strchr("!#$%&'*+-.^_`|~", c) && !(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'z') &&
		    !(c >= 'A' && c <= 'Z'))
			return bad(e, "header", "the header name must be a token (letters, digits, !#$%&'*+-.^_`|~)");
		s->header_name[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
	}
	s->header_name[n] = '\0';
	for (size_t i = 0; refused_headers[i]; i++)
		if (!strcmp(s->header_name, refused_headers[i])) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "header: %s is a header the gateway owns, not a secret's",
				      s->header_name);
			return -1;
		}
	const char *format = colon + 1 + strspn(colon + 1, " \t");
	const char *hole = strstr(format, "{}");
	if (!printable(format) || strlen(format) >= sizeof(s->header_format))
		return bad(e, "header", "the format must be printable ASCII, at most 511 characters");
	if (!hole || strstr(hole + 2, "{}"))
		return bad(e, "header", "the format must hold {} (where the value goes) exactly once");
	snprintf(s->header_format, sizeof(s->header_format), "%s", format);
	s->inject = SBX_SECRET_HEADER;
	return 0;
}

static int parse_basic(const json_t *basic, struct sbx_secret *s, struct sbx_error *e)
{
	static const struct sbx_json_field fields[] = { { "username", SBX_JSON_STRING, true, false } };
	if (sbx_json_validate(basic, fields, 1, "basic", e) != 0)
		return -1;
	const char *user = json_string_value(json_object_get(basic, "username"));
	if (!*user || strlen(user) >= sizeof(s->basic_user) ||
	    strlen(user) != json_string_length(json_object_get(basic, "username")) || !printable(user) || strchr(user, ':'))
		return bad(e, "basic.username", "1 to 255 printable ASCII characters, no ':'");
	snprintf(s->basic_user, sizeof(s->basic_user), "%s", user);
	s->inject = SBX_SECRET_BASIC;
	return 0;
}

static int parse_hosts(const json_t *hosts, struct sbx_secret *s, struct sbx_error *e)
{
	struct sbx_egress_entry x;
	char why[300];
	size_t i;
	json_t *h;
	if (json_array_size(hosts) < 1 || json_array_size(hosts) > SBX_SECRET_MAX_HOSTS)
		return bad(e, "hosts", "1 to 16 entries");
	json_array_foreach(hosts, i, h) {
		if (!json_is_string(h) || sbx_egress_parse_entry(json_string_value(h), &x, why, sizeof(why)) != 0) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "hosts[%zu]: %s", i,
				      json_is_string(h) ? why : "must be a string");
			return -1;
		}
		snprintf(s->hosts[i], sizeof(s->hosts[i]), "%s", json_string_value(h));
	}
	s->n_hosts = (int)i;
	return 0;
}

static int parse_env(const char *env, struct sbx_secret *s, struct sbx_error *e)
{
	size_t n = strlen(env);
	if (n == 0 || n > 63 || (env[0] >= '0' && env[0] <= '9') || strspn(env, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != n)
		return bad(e, "env", "must match ^[A-Z_][A-Z0-9_]{0,62}$");
	if (sbx_env_name_allowed(env, e) != 0)
		return -1;
	snprintf(s->env, sizeof(s->env), "%s", env);
	return 0;
}

/* "2026-01-31T12:00:00.000Z" or null (""). */
static int parse_time(const json_t *doc, const char *field, char out[32], struct sbx_error *e)
{
	const json_t *v = json_object_get(doc, field);
	const char *t = json_string_value(v);
	out[0] = '\0';
	if (!t)
		return 0;
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ";
	bool ok = strlen(t) == sizeof(shape) - 1;
	for (size_t i = 0; ok && shape[i]; i++)
		ok = shape[i] == 'd' ? t[i] >= '0' && t[i] <= '9' : t[i] == shape[i];
	if (!ok)
		return bad(e, field, "must be an ISO-8601 UTC time with milliseconds (2026-01-31T12:00:00.000Z) or null");
	snprintf(out, 32, "%s", t);
	return 0;
}

static int parse(const json_t *doc, struct sbx_secret *s, bool with_value, struct sbx_error *e)
{
	static const struct sbx_json_field fields[] = {
		{ "name", SBX_JSON_STRING, true, false },      { "value", SBX_JSON_STRING, false, false },
		{ "hosts", SBX_JSON_ARRAY, true, false },      { "env", SBX_JSON_STRING, true, false },
		{ "header", SBX_JSON_STRING, false, false },   { "basic", SBX_JSON_OBJECT, false, false },
		{ "createdAt", SBX_JSON_STRING, false, true }, { "rotatedAt", SBX_JSON_STRING, false, true },
		{ "lastUsedAt", SBX_JSON_STRING, false, true },
	};
	memset(s, 0, sizeof(*s));
	if (sbx_json_validate(doc, fields, sizeof(fields) / sizeof(fields[0]), "", e) != 0)
		return -1;
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)doc, key, v)
		if (json_is_string(v) && strcmp(key, "value") != 0 && strlen(json_string_value(v)) != json_string_length(v))
			return bad(e, key, "holds a NUL character");
	const char *name = json_string_value(json_object_get(doc, "name"));
	if (!sbx_secret_name_ok(name))
		return bad(e, "name", "must match ^[a-z0-9][a-z0-9_-]{0,62}$");
	snprintf(s->name, sizeof(s->name), "%s", name);
	const json_t *header = json_object_get(doc, "header"), *basic = json_object_get(doc, "basic");
	if (!header == !basic)
		return bad(e, "header", "give exactly one of header (\"NAME: FORMAT\") and basic ({username})");
	if (parse_hosts(json_object_get(doc, "hosts"), s, e) != 0 ||
	    parse_env(json_string_value(json_object_get(doc, "env")), s, e) != 0 ||
	    (header ? parse_header(json_string_value(header), s, e) : parse_basic(basic, s, e)) != 0 ||
	    parse_time(doc, "createdAt", s->created, e) != 0 || parse_time(doc, "rotatedAt", s->rotated, e) != 0 ||
	    parse_time(doc, "lastUsedAt", s->last_used, e) != 0)
		return -1;
	const json_t *value = json_object_get(doc, "value");
	if (!with_value)
		return 0;
	if (!value)
		return bad(e, "value", "required field is missing");
	return sbx_secret_set_value(s, json_string_value(value), json_string_length(value), e);
}

int sbx_secret_from_json(const json_t *doc, struct sbx_secret *s, struct sbx_error *e)
{
	return parse(doc, s, true, e);
}

int sbx_secret_from_json_meta(const json_t *doc, struct sbx_secret *s, struct sbx_error *e)
{
	return parse(doc, s, false, e);
}

json_t *sbx_secret_meta(const struct sbx_secret *s)
{
	json_t *hosts = json_array();
	for (int i = 0; i < s->n_hosts; i++)
		json_array_append_new(hosts, json_string(s->hosts[i]));
	json_t *doc = json_pack("{s:s,s:o,s:s}", "name", s->name, "hosts", hosts, "env", s->env);
	if (s->inject == SBX_SECRET_HEADER) {
		char header[600];
		snprintf(header, sizeof(header), "%s: %s", s->header_name, s->header_format);
		json_object_set_new(doc, "header", json_string(header));
	} else {
		json_object_set_new(doc, "basic", json_pack("{s:s}", "username", s->basic_user));
	}
	json_object_set_new(doc, "createdAt", s->created[0] ? json_string(s->created) : json_null());
	json_object_set_new(doc, "rotatedAt", s->rotated[0] ? json_string(s->rotated) : json_null());
	json_object_set_new(doc, "lastUsedAt", s->last_used[0] ? json_string(s->last_used) : json_null());
	return doc;
}

bool sbx_secret_host_matches(const struct sbx_secret *s, const char *host, int port)
{
	struct sbx_egress_entry entries[SBX_SECRET_MAX_HOSTS];
	struct sbx_egress_policy hosts = { .entries = entries };
	struct sbx_egress_target t = { .port = port };
	char why[300];
	if (snprintf(t.host, sizeof(t.host), "%s", host) >= (int)sizeof(t.host))
		return false;
	/* The secret's hosts read as an allowlist of their own. */
	for (int i = 0; i < s->n_hosts && i < SBX_SECRET_MAX_HOSTS; i++)
		if (sbx_egress_parse_entry(s->hosts[i], &entries[hosts.n], why, sizeof(why)) == 0)
			hosts.n++;
	return sbx_egress_matches(&hosts, &t);
}
