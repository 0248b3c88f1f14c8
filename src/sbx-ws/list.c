/* list.c — ls: every file of a workspace, or those the paths select (a
 * directory stands for the files below it), scanned relative to the key's
 * one fd; symlinks are listed by nobody and followed never. */
#include "ws.h"
#include "../lib/clock.h"
#include "../lib/exitcodes.h"
#include "../lib/snap_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int ws_ls(const struct ws_opts *o, const char *raw_key, char *const *paths, int n, struct sbx_error *e)
{
	char key[SBX_REMOTE_KEY_MAX + 1];
	json_t *clean = ws_selection(paths, n, o->only, e);
	if (!clean)
		return -1;
	int dir = ws_open(o->data, raw_key, true, key, e);
	struct sbx_snap_scan scan = { 0 };
	int scanned = dir < 0 ? -1 : sbx_snap_scan_at(dir, &scan, e);
	if (dir >= 0)
		close(dir);
	if (scanned != 0) {
		json_decref(clean);
		if (dir >= 0)
			e->exit_code = SBX_EXIT_USAGE;
		return -1;
	}
	json_t *out = json_array();
	for (size_t i = 0; i < scan.len; i++) {
		const struct sbx_snap_entry *en = &scan.v[i];
		if (en->type != SBX_ENTRY_FILE || !ws_selected(en->path, clean))
			continue;
		char when[32];
		sbx_iso_time(en->mtime_ns / 1000000, when);
		json_array_append_new(out, json_pack("{s:s,s:s,s:I}", "modifiedAt", when, "path", en->path, "size",
						     (json_int_t)en->size));
	}
	sbx_snap_scan_free(&scan);
	json_decref(clean);
	char *text = json_dumps(out, JSON_COMPACT);
	json_decref(out);
	if (!text) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "internal", "out of memory");
		return -1;
	}
	printf("%s\n", text);
	free(text);
	return 0;
}
