/* secret_store.h — the secret store (issue #31): one 0600 JSON file per
 * secret in a 0700 directory, the fields' grammar, and where a secret may
 * be sent. sbx-secrets writes it; the egress gateway reads values from it. */
#ifndef SBX_SECRET_STORE_H
#define SBX_SECRET_STORE_H

#include "error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define SBX_SECRET_MAX_HOSTS 16
#define SBX_SECRET_VALUE_MIN 8
#define SBX_SECRET_VALUE_MAX 4096
#define SBX_SECRET_FILE_MAX (64u << 10) /* a stored file is read with this cap */
#define SBX_SECRET_LIST_MAX 1000

/* Returns of store_open and load other than 0 / a fd and -1. */
#define SBX_SECRET_NO_STORE (-2) /* store_open without create: the directory does not exist */
#define SBX_SECRET_UNKNOWN (-2)  /* load, remove: no secret by that name (e->code "unknown-secret") */

enum sbx_secret_inject { SBX_SECRET_HEADER, SBX_SECRET_BASIC };

struct sbx_secret {
	char name[64];           /* ^[a-z0-9][a-z0-9_-]{0,62}$ */
	char env[64];            /* ^[A-Z_][A-Z0-9_]{0,62}$, not a name the launch reserves */
	int n_hosts;
	char hosts[SBX_SECRET_MAX_HOSTS][262]; /* egress allowlist grammar: name or *.name, optional :port */
	enum sbx_secret_inject inject;
	char header_name[64];    /* SBX_SECRET_HEADER: a token, lower-cased */
	char header_format[512]; /* exactly one "{}", printable ASCII */
	char basic_user[256];    /* SBX_SECRET_BASIC: printable ASCII, no ':' */
	char *value;             /* NULL unless loaded with its value: a locked, undumpable page, cleansed on free */
	size_t value_len;
	char created[32], rotated[32], last_used[32]; /* ISO-8601 UTC with ms, "" for null */
};

/* secret_store.c: the directory, its files and their fields. */

/* True for a secret name: ^[a-z0-9][a-z0-9_-]{0,62}$ (its file is NAME.json). */
bool sbx_secret_name_ok(const char *name);
/* The store directory as an O_RDONLY directory fd. With create, missing
 * directories are made (the store itself 0700). Refused (exit 9,
 * "unsafe-store"): a symlink, a directory another uid owns, or one
 * group or others may access. Without create, SBX_SECRET_NO_STORE when
 * it does not exist (e set). -1 with e otherwise. */
int sbx_secret_store_open(const char *dir, bool create, struct sbx_error *e);
/* NAME.json below dirfd (O_NOFOLLOW, regular, at most SBX_SECRET_FILE_MAX)
 * into *s; its value only when with_value. SBX_SECRET_UNKNOWN when there
 * is no such secret, -1 with e (naming the file and field) otherwise. */
int sbx_secret_load(int dirfd, const char *name, bool with_value, struct sbx_secret *s, struct sbx_error *e);
/* Writes s (with its value) as NAME.json, 0600, atomically and durably. */
int sbx_secret_save(int dirfd, const struct sbx_secret *s, struct sbx_error *e);
/* Removes NAME.json: 0, SBX_SECRET_UNKNOWN, or -1 with e. */
int sbx_secret_remove(int dirfd, const char *name, struct sbx_error *e);
/* The names held, sorted, at most SBX_SECRET_LIST_MAX: a count, or -1
 * with e. *names is an array of strings; free it with sbx_secret_names_free. */
int sbx_secret_list(int dirfd, char ***names, struct sbx_error *e);
void sbx_secret_names_free(char **names, int n);
/* Sets s's value to a copy of len bytes: 1 to SBX_SECRET_VALUE_MAX of
 * 0x20-0x7e (it goes into an HTTP header); -1 with e naming the byte's
 * position, never the byte. */
int sbx_secret_set_value(struct sbx_secret *s, const char *value, size_t len, struct sbx_error *e);
/* A secret document {name, value, hosts, env, header | basic, createdAt?,
 * rotatedAt?, lastUsedAt?} checked field by field into *s (value
 * included); -1 with e naming the field, s then holding no value. */
int sbx_secret_from_json(const json_t *doc, struct sbx_secret *s, struct sbx_error *e);
/* The same without the value: a present one is type-checked, not read
 * (s->value stays NULL). */
int sbx_secret_from_json_meta(const json_t *doc, struct sbx_secret *s, struct sbx_error *e);
/* {name, hosts, env, header | basic: {username}, createdAt, rotatedAt,
 * lastUsedAt}: never the value. */
json_t *sbx_secret_meta(const struct sbx_secret *s);
/* True when s may be sent to host:port (host lower-case, no trailing dot):
 * an entry names it, or is *.D with host below D, and pins no other port. */
bool sbx_secret_host_matches(const struct sbx_secret *s, const char *host, int port);

/* secret_value.c: where a value is held. */

/* Cleanses and releases the value; the rest of s stays readable. */
void sbx_secret_free(struct sbx_secret *s);
/* A buffer of size bytes on locked (where the memlock limit allows),
 * undumpable pages; released (cleansed first) with the same size. */
char *sbx_secret_buffer(size_t size);
void sbx_secret_buffer_free(char *p, size_t size);
/* fd to EOF in one sbx_secret_buffer of cap + 2 bytes (NUL-terminated,
 * never reallocated, so no copy is left behind); NULL with e (naming
 * what) past cap bytes. Release it with sbx_secret_buffer_free(p, cap + 2). */
char *sbx_secret_read_fd(int fd, size_t cap, size_t *len, const char *what, struct sbx_error *e);
/* Makes jansson cleanse what it frees (its lexer's buffer and strings
 * held values); a program that parses values calls it first. */
void sbx_secret_json_cleansing(void);

#endif
