/* manifest.c — a finished job's created files (npu.md 2.4): the lines of
 * artifact_manifest.txt at the workspace root and beside the config, each
 * resolved and kept only inside the workspace, in manifest order (at most
 * CREATED_FILES_MAX, de-duplicated through a hash set). */
#include "broker.h"
#include "../lib/path.h"

#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MANIFEST_LINES_MAX 100000
#define CREATED_FILES_MAX 10000 /* entries reported; the rest are not listed */

/* seen: the entries so far as an object's keys (a hash set). */
static void read_manifest(const char *workspace, const char *dir, json_t *out, json_t *seen)
{
	char path[PATH_MAX * 2], line[PATH_MAX];
	snprintf(path, sizeof(path), "%s/artifact_manifest.txt", dir);
	/* The workload wrote it: never a FIFO that blocks, never a symlink. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	FILE *f = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "r") : NULL;
	if (!f && fd >= 0)
		close(fd);
	for (int n = 0; f && n < MANIFEST_LINES_MAX && fgets(line, sizeof(line), f); n++) {
		char *s = line, *end = line + strlen(line);
		while (*s == ' ' || *s == '\t')
			s++;
		while (end > s && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (!*s || *s == '#')
			continue;
		char joined[PATH_MAX * 3];
		snprintf(joined, sizeof(joined), "%s/%s", s[0] == '/' ? "" : dir, s);
		char *real = realpath(s[0] == '/' ? s : joined, NULL);
		if (real && sbx_path_is_within(workspace, real) && strcmp(real, workspace) != 0 &&
		    json_array_size(out) < CREATED_FILES_MAX) {
			const char *rel = real + strlen(workspace) + 1;
			if (!json_object_get(seen, rel)) {
				json_object_set_new(seen, rel, json_true());
				json_array_append_new(out, json_string(rel));
			}
		}
		free(real);
	}
	if (f)
		fclose(f);
}

json_t *broker_created_files(const char *workspace, const json_t *inputs)
{
	json_t *out = json_array(), *seen = json_object();
	read_manifest(workspace, workspace, out, seen);
	const char *config = json_string_value(json_object_get(inputs, "configPath"));
	if (config && config[0] && config[0] != '/') {
		char joined[PATH_MAX * 2];
		snprintf(joined, sizeof(joined), "%s/%s", workspace, config);
		char *dir = dirname(joined);
		char *real = realpath(dir, NULL);
		if (real && sbx_path_is_within(workspace, real) && strcmp(real, workspace) != 0)
			read_manifest(workspace, real, out, seen);
		free(real);
	}
	json_decref(seen);
	return out;
}
