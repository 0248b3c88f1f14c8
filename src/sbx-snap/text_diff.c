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

/* prefix/path as diff's label: as it is, or quoted as git quotes a name
 * (in double quotes, with C escapes) when it holds a control character, a
 * double quote or a backslash: a file's name never adds a line to the
 * diff (a "\n+++ b/other" in it would retarget a patch). */
static void label(const char *prefix, const char *path, char *out, size_t size)
{
	size_t n = 0;
	bool quote = false;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		quote |= *p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\';
	if (!quote) {
		snprintf(out, size, "%s%s", prefix, path);
		return;
	}
	n += (size_t)snprintf(out, size, "\"%s", prefix);
	for (const unsigned char *p = (const unsigned char *)path; *p && n + 6 < size; p++) {
		const char *esc = *p == '\n' ? "\\n" : *p == '\t' ? "\\t" : *p == '"' ? "\\\"" : *p == '\\' ? "\\\\" : NULL;
		if (esc)
			n += (size_t)snprintf(out + n, size - n, "%s", esc);
		else if (*p < 0x20 || *p == 0x7f)
			n += (size_t)snprintf(out + n, size - n, "\\%03o", *p);
		else
			out[n++] = (char)*p;
	}
	snprintf(out + n, size - n, "\"");
}

json_t *snap_text_diff(const char *store, const char *path, const char *from, uint64_t from_size,
		       const char *to, uint64_t to_size, size_t *budget, int timeout_ms, const char **reason)
{
	char pa[PATH_MAX] = "/dev/null", pb[PATH_MAX] = "/dev/null", la[4 * PATH_MAX + 8] = "/dev/null",
	     lb[4 * PATH_MAX + 8] = "/dev/null", diff[PATH_MAX];
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
		label("a/", path, la, sizeof(la));
	if (to)
		label("b/", path, lb, sizeof(lb));
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
