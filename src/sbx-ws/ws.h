/* ws.h — what sbx-ws's files share: the command's options, the workspace
 * opened by key, and one function per command. Every error is an
 * sbx_error whose message is the runner API's text (sbx-httpd relays it). */
#ifndef SBX_WS_H
#define SBX_WS_H

#include "../lib/datadir.h"
#include "../lib/error.h"
#include "../lib/remote_path.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define WS_PATHS_MAX 50  /* paths one listing or snapshot may name */
#define FORK_KEYS_MAX 64 /* workspaces one fork makes */

/* Diagnostic codes sbx-httpd maps onto statuses (409 for these two). */
#define WS_CODE_EXISTS "exists"
#define WS_CODE_CHANGED "changed"

struct ws_opts {
	char data[PATH_MAX];
	bool only;                 /* the positional paths are the selection, even none */
	int fd_socket;             /* cat: hand the file over this socket (-1: bytes on stdout) */
	int from_fd;               /* put: the body is this file (-1: stdin) */
	long long size;            /* put: the body's exact size (-1: any) */
	const char *sha256;        /* put: the body's hash (NULL: unchecked) */
	mode_t mode;               /* put: 0644 | exec bits */
	bool overwrite;            /* put */
	long long max_bytes;       /* put, snapshot: the workspace quota (0: none) */
	long long keep, grace_s;   /* collect */
	bool text;                 /* diff: unified diffs of text files */
	unsigned text_files, text_bytes; /* diff --text: its bounds */
	long long lease_wait_ms;   /* restore, fork, diff: how long a run's lease is waited for */
	long long count;           /* fork: how many, when no key is named */
};

/* workspace.c: the key's directory fd beneath <data>/remote-workspaces
 * (created when asked), or -1 with e; the clean key into key. */
int ws_open(const char *data, const char *raw_key, bool create, char key[SBX_REMOTE_KEY_MAX + 1],
	    struct sbx_error *e);
/* The clean relative path into rel, or false with e. */
bool ws_rel_path(const char *raw, char rel[SBX_REMOTE_PATH_MAX + 1], struct sbx_error *e);
/* The selection: the clean paths (NULL with only false: everything). */
json_t *ws_selection(char *const *paths, int n, bool only, struct sbx_error *e);
bool ws_selected(const char *path, const json_t *clean);
/* Removes the key's directory and everything in it, never following a
 * symlink at any level (a symlink at the key itself is unlinked). 0, or
 * -1 with errno (ENOENT: nothing there; ELOOP: a symlinked parent). */
int sbx_remote_workspace_remove(const char *data_dir, const char *key);

/* The commands: 0, or -1 with e; JSON answers on stdout. */
int ws_ls(const struct ws_opts *o, const char *key, char *const *paths, int n, struct sbx_error *e);
int ws_cat(const struct ws_opts *o, const char *key, const char *path, struct sbx_error *e);
int ws_put(const struct ws_opts *o, const char *key, const char *path, struct sbx_error *e);
int ws_rm(const struct ws_opts *o, const char *key, const char *path, struct sbx_error *e);
int ws_snapshot(const struct ws_opts *o, const char *key, char *const *paths, int n, struct sbx_error *e);
int ws_snapshot_cat(const struct ws_opts *o, const char *key, const char *id, const char *path, struct sbx_error *e);
int ws_collect(const struct ws_opts *o, struct sbx_error *e);
/* history.c: versions KEY, diff KEY FROM TO, restore KEY VERSION (cmd and
 * its operands after the key), and fork: sbx-snap on the key's fd. */
int ws_history(const struct ws_opts *o, const char *cmd, const char *key, char *const *ops, int n,
	       struct sbx_error *e);
int ws_fork(const struct ws_opts *o, const char *key, const char *version, char *const *named, int n,
	    struct sbx_error *e);

/* read.c: an open regular file served: over o->fd_socket (then
 * {"size": N} on stdout) or its bytes copied to stdout. Closes fd. */
int ws_serve(const struct ws_opts *o, int fd, struct sbx_error *e);

/* <data>/remote-snapshots[/leaf] into out. */
static inline void snapshot_store_path(const char *data, const char *leaf, char *out, size_t size)
{
	sbx_data_path(data, SBX_DATA_REMOTE_SNAPSHOTS, leaf, out, size);
}

#endif
