/* publish.c — a checked bundle's files written below a temp directory of
 * the store (no symlink followed, every file fsynced), its manifest
 * beside them, and the whole published under <id> by one rename. */
#include "skills.h"
#include "../lib/beneath.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/tree_remove.h"
#include "../lib/uuid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int write_file(int root, json_t *f)
{
	const char *leaf;
	json_t *b = bundle_file_bytes(f);
	int parent = sbx_beneath_parent(root, json_string_value(json_object_get(f, "path")), true, &leaf);
	int fd = parent < 0 ? -1 : openat(parent, leaf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	int rc = fd >= 0 && sbx_write_all(fd, json_string_value(b), json_string_length(b)) == 0 && fsync(fd) == 0 ? 0 : -1;
	int saved = errno;
	if (fd >= 0)
		close(fd);
	if (parent >= 0)
		close(parent);
	errno = saved;
	return rc;
}

static int write_skills(int tmp, json_t *skills)
{
	size_t i, k;
	json_t *s, *f;
	json_array_foreach(skills, i, s) {
		const char *id = json_string_value(json_object_get(s, "id"));
		if (mkdirat(tmp, id, 0755) != 0)
			return -1;
		int root = sbx_open_beneath(tmp, id, O_RDONLY | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
		if (root < 0)
			return -1;
		json_array_foreach(json_object_get(s, "files"), k, f)
			if (write_file(root, f) != 0) {
				int saved = errno;
				close(root);
				errno = saved;
				return -1;
			}
		close(root);
	}
	return 0;
}

/* The manifest: every skill's id, revision, version and hash, in the
 * bundle's order (the id is computed from it sorted). */
static int write_manifest(int tmp, const json_t *skills)
{
	json_t *m = json_array(), *s;
	size_t i;
	json_array_foreach(skills, i, s)
		json_array_append_new(m, json_pack("{s:O,s:O,s:O,s:O}", "id", json_object_get(s, "id"), "revision",
						   json_object_get(s, "revision"), "version",
						   json_object_get(s, "version") ? json_object_get(s, "version") : json_null(),
						   "hash", json_object_get(s, "hash")));
	char *text = json_dumps(m, JSON_COMPACT);
	json_decref(m);
	int fd = text ? openat(tmp, SKILLS_MANIFEST, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644) : -1;
	int rc = fd >= 0 && sbx_write_all(fd, text, strlen(text)) == 0 && fsync(fd) == 0 ? 0 : -1;
	int saved = errno;
	if (fd >= 0)
		close(fd);
	free(text);
	errno = saved;
	return rc;
}

int publish(struct store *s, json_t *skills, const char *id, struct sbx_error *e)
{
	char tmp[SBX_SHA256_HEX_LEN + 64], uuid[40];
	int top = sbx_open_beneath(s->fd, ".", O_RDONLY | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
	sbx_uuid4("", uuid, sizeof(uuid));
	snprintf(tmp, sizeof(tmp), ".incoming-%s-%.8s", id, uuid);
	int rc = top >= 0 && mkdirat(top, tmp, 0755) == 0 ? 0 : -1;
	int dir = rc == 0 ? sbx_open_beneath(top, tmp, O_RDONLY | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS) : -1;
	rc = dir >= 0 && fchmod(dir, 0755) == 0 && write_skills(dir, skills) == 0 && write_manifest(dir, skills) == 0 &&
		     fsync(dir) == 0 ? 0 : -1;
	int saved = errno;
	if (dir >= 0)
		close(dir);
	if (rc == 0) {
		/* A held copy that failed its check is replaced by the genuine one;
		 * another upload of the same package may have won: same bytes. */
		int held = store_package_open(s, id);
		/* Something else planted under the id (a symlink, a file) goes. */
		if (held < 0 && (errno == ELOOP || errno == ENOTDIR))
			sbx_remove_tree_at(top, id);
		if (held >= 0) {
			bool intact = verify_hashes(held, id);
			close(held);
			if (!intact) {
				stamp_remove(s, id);
				sbx_remove_tree_at(top, id);
			}
		}
		if (renameat(top, tmp, top, id) != 0 && errno != ENOTEMPTY && errno != EEXIST) {
			rc = -1;
			saved = errno;
		} else {
			fsync(top);
		}
	}
	if (top >= 0) {
		sbx_remove_tree_at(top, tmp);
		close(top);
	}
	if (rc != 0)
		sbx_error_set(e, SBX_EXIT_INTERNAL, "store", "Cannot store the skill package: %s", strerror(saved));
	return rc;
}
