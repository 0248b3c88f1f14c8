/* secrets.h — sbx-secrets' own parts: the store it was pointed at and its
 * writers' lock (store.c), what stdin holds (input.c), the writing
 * commands (put.c) and the check a run makes before it starts (check.c). */
#ifndef SBX_SECRETS_H
#define SBX_SECRETS_H

#include "../lib/error.h"
#include "../lib/secret_store.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>

#define SECRETS_INPUT_MAX (64u << 10) /* a --json document on stdin */

/* What the command line said. */
struct options {
	const char *store;          /* --store, else <data dir>/secrets */
	const char *hosts[SBX_SECRET_MAX_HOSTS + 1];
	int n_hosts;
	const char *header, *basic, *env, *policy;
	bool replace, json, touch;
};

/* store.c */
/* The store as a directory fd (create: made 0700 when missing); exits on
 * a refusal. SBX_SECRET_NO_STORE when it does not exist and !create. */
int store_dir(const char *path, bool create);
/* Holds an exclusive flock on <store>/.lock until the program exits. */
void store_lock(int dirfd);
/* "<now ISO-8601 UTC ms>" into out. */
void store_now(char out[32]);

/* input.c */
/* stdin, the value alone: one trailing newline dropped. Exits on bad input. */
void input_value(struct sbx_secret *s);
/* stdin as one JSON object (jansson's error text cut before any quoted
 * input, so a value never reaches a diagnostic). Exits on bad input. */
json_t *input_json(void);
/* Cleanses a parsed input's value string before it is freed. */
void input_forget(json_t *doc);

/* put.c */
int cmd_put(const char *store, const char *name, const struct options *o);
int cmd_rotate(const char *store, const char *name, const struct options *o);
int cmd_rm(const char *store, const char *name);

/* check.c */
int cmd_check(const char *store, char **names, int n, const struct options *o);

#endif
