/* text_diff.c — a unified diff of two stored versions of one file, by
 * diff(1) from diffutils (Essential on Debian: no diff algorithm of our
 * own), given the store's objects: only text (UTF-8 without NUL), each
 * side at most TEXT_FILE_INPUT_MAX bytes, the output within the caller's
 * byte budget and the caller's deadline. */
#include "snap.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "../lib/program_path.h"
#include "../lib/spawn.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Whether the object (already known to be at most TEXT_FILE_INPUT_MAX
 * bytes) is text: valid UTF-8 with no NUL. */
static bool is_text(const char *path)
{
	struct sbx_error e;
	size_t n;
	char *buf = sbx_read_file_capped(path, TEXT_FILE_INPUT_MAX, &n, &e);
	bool text = buf && !memchr(buf, 0, n);
	for (size_t i = 0; text && i < n;) {
		int k = sbx_utf8_sequence((const unsigned char *)buf + i, n - i);
		text = k > 0;
		i += k > 0 ? (size_t)k : 0;
	}
	free(buf);
	return text;
}

json_t *snap_text_diff(const char *store, const char *path, const char *from, uint64_t from_size,
		       const char *to, uint64_t to_size, size_t *budget, int timeout_ms, const char **reason)
{
	char pa[PATH_MAX] = "/dev/null", pb[PATH_MAX] = "/dev/null", la[PATH_MAX + 8] = "/dev/null",
	     lb[PATH_MAX + 8] = "/dev/null", diff[PATH_MAX];
	if (from_size > TEXT_FILE_INPUT_MAX || to_size > TEXT_FILE_INPUT_MAX) {
		*reason = "too-large";
		return NULL;
	}
	if (from && (sbx_snap_object_path(store, from, pa, sizeof(pa)) != 0 || !is_text(pa))) {
		*reason = "binary";
		return NULL;
	}
	if (to && (sbx_snap_object_path(store, to, pb, sizeof(pb)) != 0 || !is_text(pb))) {
		*reason = "binary";
		return NULL;
	}
	if (from)
		snprintf(la, sizeof(la), "a/%s", path);
	if (to)
		snprintf(lb, sizeof(lb), "b/%s", path);
	if (!*budget) {
		*reason = "budget";
		return NULL;
	}
	if (!sbx_find_executable("diff", diff, sizeof(diff))) {
		*reason = "no-diff-program";
		return NULL;
	}
	const char *argv[] = { diff, "-u", "--label", la, "--label", lb, "--", pa, pb, NULL };
	char *const envp[] = { "LC_ALL=C", NULL };
	struct sbx_spawn s = { .argv = argv, .envp = envp, .stdin_fd = -1, .new_process_group = true,
			       .die_with_parent = true };
	struct sbx_capture c;
	struct sbx_error e;
	if (sbx_spawn_capture(&s, timeout_ms, *budget, &c, &e) != 0) {
		*reason = "no-diff-program";
		return NULL;
	}
	json_t *text = NULL;
	if (c.out_truncated)
		*reason = "budget";
	else if (c.timed_out || !WIFEXITED(c.status) || WEXITSTATUS(c.status) > 1)
		*reason = c.timed_out ? "too-slow" : "diff-failed";
	else if ((text = sbx_json_stringn_lossy(c.out, c.out_len)))
		*budget -= c.out_len;
	sbx_capture_free(&c);
	return text;
}
