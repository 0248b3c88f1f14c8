/* diff.c — two snapshots compared path by path: created, deleted,
 * modified and type-changed entries with their types and sizes, and on
 * request a unified diff of each changed text file, bounded in files and
 * bytes. */
#include "snap.h"
#include "../lib/clock.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The fields that make two entries of one path the same. */
static bool same_entry(const json_t *a, const json_t *b)
{
	static const char *const keys[] = { "type", "exec", "digest", "target" };
	for (size_t i = 0; i < 4; i++)
		if (!json_equal(json_object_get(a, keys[i]), json_object_get(b, keys[i])) &&
		    (json_object_get(a, keys[i]) || json_object_get(b, keys[i])))
			return false;
	return true;
}

int snap_changes(const json_t *ea, const json_t *eb, int (*visit)(const json_t *a, const json_t *b, void *arg),
		 void *arg)
{
	size_t i = 0, j = 0;
	while (i < json_array_size(ea) || j < json_array_size(eb)) {
		json_t *x = json_array_get(ea, i), *y = json_array_get(eb, j);
		int cmp = !x ? 1 : !y ? -1 : strcmp(sbx_json_string_or(x, "path", ""), sbx_json_string_or(y, "path", ""));
		int rc = cmp < 0 ? visit(x, NULL, arg) : cmp > 0 ? visit(NULL, y, arg) : same_entry(x, y) ? 0 : visit(x, y, arg);
		if (rc)
			return rc;
		i += cmp <= 0;
		j += cmp >= 0;
	}
	return 0;
}

#define DIFF_TIMEOUT_MS 10000 /* one file's diff */

struct diff {
	const struct args *a;
	json_t *created, *modified, *deleted, *changes;
	size_t text_files, text_budget, text_used;
	long long text_deadline; /* sbx_mono_ms: no diff starts after it */
	bool text_truncated;
};

static bool is_type(const json_t *row, const char *type)
{
	return row && !strcmp(sbx_json_string_or(row, "type", ""), type);
}

/* One side of a change: its type and size (a file's) or target (a symlink's). */
static void describe(json_t *change, const json_t *row, const char *type_key, const char *size_key,
		     const char *digest_key)
{
	if (!row)
		return;
	json_object_set(change, type_key, json_object_get(row, "type"));
	if (is_type(row, "file")) {
		json_object_set(change, size_key, json_object_get(row, "size"));
		json_object_set(change, digest_key, json_object_get(row, "digest"));
		json_object_set(change, !strcmp(type_key, "type") ? "exec" : "previousExec", json_object_get(row, "exec"));
	} else if (is_type(row, "symlink")) {
		json_object_set(change, !strcmp(type_key, "type") ? "target" : "previousTarget", json_object_get(row, "target"));
	}
}

static void add_text(struct diff *d, json_t *change, const json_t *x, const json_t *y)
{
	const char *reason = NULL;
	json_t *text = NULL;
	if ((x && !is_type(x, "file")) || (y && !is_type(y, "file")))
		return; /* a directory or a symlink on one side: no text */
	if (x && y && json_equal(json_object_get(x, "digest"), json_object_get(y, "digest")))
		return; /* the exec bit alone changed */
	long long left_ms = d->text_deadline - sbx_mono_ms();
	if (d->text_files >= d->a->text_files) {
		reason = "files";
	} else if (left_ms <= 0) {
		reason = "deadline";
	} else {
		size_t left = d->text_budget - d->text_used, before = left;
		text = snap_text_diff(d->a->store, sbx_json_string_or(y ? y : x, "path", ""),
				      x ? sbx_json_string_or(x, "digest", "") : NULL,
				      x ? (uint64_t)json_integer_value(json_object_get(x, "size")) : 0,
				      y ? sbx_json_string_or(y, "digest", "") : NULL,
				      y ? (uint64_t)json_integer_value(json_object_get(y, "size")) : 0, &left,
				      left_ms < DIFF_TIMEOUT_MS ? (int)left_ms : DIFF_TIMEOUT_MS, &reason);
		d->text_used += before - left;
		if (text)
			d->text_files++;
	}
	if (text)
		json_object_set_new(change, "text", text);
	else if (reason) {
		json_object_set_new(change, "textOmitted", json_string(reason));
		d->text_truncated |= !strcmp(reason, "files") || !strcmp(reason, "budget") || !strcmp(reason, "deadline");
	}
}

static int visit(const json_t *x, const json_t *y, void *arg)
{
	struct diff *d = arg;
	const json_t *side = y ? y : x;
	const char *what = !x ? "created" : !y ? "deleted"
				: strcmp(sbx_json_string_or(x, "type", ""), sbx_json_string_or(y, "type", "")) ? "type-changed"
													: "modified";
	json_t *path = json_object_get(side, "path"), *change = json_pack("{s:O,s:s}", "path", path, "change", what);
	describe(change, y, "type", "size", "digest");
	describe(change, x, "previousType", "previousSize", "previousDigest");
	if (d->a->text)
		add_text(d, change, x, y);
	json_array_append_new(d->changes, change);
	/* The lists of paths as before: files and symlinks, a changed type
	 * counted as modified. */
	if (x && y)
		json_array_append(d->modified, path);
	else if (!is_type(side, "dir"))
		json_array_append(!x ? d->created : d->deleted, path);
	return 0;
}

static int resolve(const struct args *a, int wsfd, const char *what, char digest[72], struct sbx_error *e)
{
	return wsfd >= 0 ? snap_version(a, wsfd, what, digest, e) : sbx_snap_resolve(a->store, what, digest, e);
}

json_t *snap_diff(const struct args *a, const char *from, const char *to, struct sbx_error *e)
{
	char da[72], db[72];
	int wsfd = a->workspace || a->workspace_fd >= 0 ? snap_workspace_open(a, e) : -1;
	if ((a->workspace || a->workspace_fd >= 0) && wsfd < 0)
		return NULL;
	int rc = resolve(a, wsfd, from, da, e) == 0 && resolve(a, wsfd, to, db, e) == 0 ? 0 : -1;
	if (wsfd >= 0)
		close(wsfd);
	if (rc != 0)
		return NULL;
	json_t *ma = sbx_snap_manifest(a->store, da, e), *mb = ma ? sbx_snap_manifest(a->store, db, e) : NULL;
	if (!mb) {
		json_decref(ma);
		return NULL;
	}
	struct diff d = { .a = a, .created = json_array(), .modified = json_array(), .deleted = json_array(),
			  .changes = json_array(), .text_budget = a->text_bytes,
			  .text_deadline = sbx_mono_ms() + a->text_ms };
	snap_changes(json_object_get(ma, "entries"), json_object_get(mb, "entries"), visit, &d);
	json_decref(ma);
	json_decref(mb);
	json_t *out = json_pack("{s:s,s:s,s:o,s:o,s:o,s:o}", "from", da, "to", db, "created", d.created, "modified",
				d.modified, "deleted", d.deleted, "changes", d.changes);
	if (a->text)
		json_object_set_new(out, "text", json_pack("{s:I,s:I,s:b}", "files", (json_int_t)d.text_files, "bytes",
							   (json_int_t)d.text_used, "truncated", d.text_truncated));
	return out;
}
