/* store.c — the store, <data>/skill-packages: opened as a directory fd
 * with no symlink, its packages opened below it, and listed. */
#include "skills.h"
#include "../lib/atomic_file.h"
#include "../lib/beneath.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/tree_remove.h"
#include "../lib/datadir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STALE_INCOMING_S 3600

int store_open(struct store *s, const char *data_dir, bool create, struct sbx_error *e)
{
	s->fd = -1;
	if (sbx_data_path(data_dir, SBX_DATA_SKILL_PACKAGES, NULL, s->dir, sizeof(s->dir)) != 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "--data-dir: the path is too long");
		return -1;
	}
	if (create && sbx_mkdir_p(data_dir, 0755, e) != 0)
		return -1;
	int data = open(data_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (data < 0) {
		if (errno == ENOENT && !create)
			return 0;
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "--data-dir: %s: %s", data_dir, strerror(errno));
		return -1;
	}
	int fd = sbx_beneath_step(data, sbx_data_layout[SBX_DATA_SKILL_PACKAGES].name, create);
	int saved = errno;
	close(data);
	if (fd < 0 && saved == ENOENT && !create)
		return 0;
	if (fd < 0) {
		sbx_error_set(e, saved == ELOOP ? SBX_EXIT_INTEGRITY : SBX_EXIT_INTERNAL, saved == ELOOP ? "symlink" : "store",
			      "%s: %s", s->dir, saved == ELOOP ? "the store must not be a symbolic link" : strerror(saved));
		return -1;
	}
	s->fd = fd;
	return 0;
}

void store_close(struct store *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

bool store_id_ok(const char *id)
{
	return id && strlen(id) == SBX_SHA256_HEX_LEN && strspn(id, "0123456789abcdef") == SBX_SHA256_HEX_LEN;
}

int store_package_open(const struct store *s, const char *id)
{
	if (!store_id_ok(id))
		return errno = EINVAL, -1;
	if (s->fd < 0)
		return errno = ENOENT, -1;
	return sbx_open_beneath(s->fd, id, O_RDONLY | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
}

/* The skills a package's manifest names (id, revision, version), or null. */
static json_t *manifest_skills(int pkg)
{
	json_t *doc = store_manifest(pkg), *out, *m;
	size_t i;
	if (!doc)
		return json_null();
	out = json_array();
	json_array_foreach(doc, i, m)
		json_array_append_new(out, json_pack("{s:O?,s:O?,s:O?}", "id", json_object_get(m, "id"), "revision",
						     json_object_get(m, "revision"), "version", json_object_get(m, "version")));
	json_decref(doc);
	return out;
}

static int by_id(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *store_list(const struct store *s)
{
	json_t *out = json_array();
	if (s->fd < 0)
		return out;
	int fd = sbx_open_beneath(s->fd, ".", O_RDONLY | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return out;
	}
	char **ids = NULL;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (store_id_ok(de->d_name)) {
			char **grown = realloc(ids, (n + 1) * sizeof(*ids));
			if (!grown)
				break;
			ids = grown;
			if (!(ids[n] = strdup(de->d_name)))
				break;
			n++;
		}
	closedir(d);
	if (n)
		qsort(ids, n, sizeof(*ids), by_id);
	for (size_t i = 0; i < n; i++) {
		char root[PATH_MAX + 80];
		int pkg = store_package_open(s, ids[i]);
		if (pkg >= 0) {
			snprintf(root, sizeof(root), "%s/%s", s->dir, ids[i]);
			json_array_append_new(out, json_pack("{s:s,s:s,s:o,s:b}", "id", ids[i], "root", root, "skills",
							     manifest_skills(pkg), "verified", stamp_valid(s, ids[i], pkg)));
			close(pkg);
		}
		free(ids[i]);
	}
	free(ids);
	return out;
}

/* A temp directory a put left when it was killed goes once it is an hour
 * old (a put never takes that long): what a crash left is collected. */
void store_sweep_incoming(const struct store *s)
{
	int top = s->fd;
	int fd = top < 0 ? -1 : sbx_open_beneath(top, ".", O_RDONLY | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	struct stat st;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, ".incoming-", 10) && fstatat(top, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_mtime < time(NULL) - STALE_INCOMING_S)
			sbx_remove_tree_at(top, de->d_name);
	closedir(d);
}
