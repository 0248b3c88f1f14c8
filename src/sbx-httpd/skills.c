/* skills.c — skill packages (runner-api 4 rows 30-31, 5.7): a bundle is
 * checked whole (ids, revisions, canonical base64, sizes and hashes, a
 * SKILL.md in every skill), its id computed from the canonical manifest,
 * and the files published under <data>/skill-packages/<id> (outside every
 * tree an execution can name) by one rename, with a manifest that lets
 * skills_held.c verify the package before it is served. */
#include "httpd.h"
#include "../lib/beneath.h"
#include "../lib/atomic_file.h"
#include "../lib/base64.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "../lib/remote_path.h"
#include "../lib/tree_remove.h"

#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SKILLS_MAX 256
#define FILES_MAX 4096

static bool skill_id_ok(const char *id)
{
	regex_t re;
	regcomp(&re, "^[a-z0-9]+(-[a-z0-9]+)*$", REG_EXTENDED | REG_NOSUB);
	bool ok = id && strlen(id) <= 128 && regexec(&re, id, 0, NULL, 0) == 0;
	regfree(&re);
	return ok;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "path")),
		      json_string_value(json_object_get(*(json_t *const *)b, "path")));
}

/* Decodes every file of skill into "bytes" (a hidden member), checks it
 * and computes the skill's hash; NULL when fine, else the problem. */
static const char *check_skill(json_t *skill, char *why, size_t size)
{
	const char *id = json_string_value(json_object_get(skill, "id"));
	json_t *rev = json_object_get(skill, "revision"), *files = json_object_get(skill, "files");
	if (!skill_id_ok(id))
		return snprintf(why, size, "skill id must match ^[a-z0-9]+(-[a-z0-9]+)*$"), why;
	if (!json_is_integer(rev) || json_integer_value(rev) < 1)
		return snprintf(why, size, "skill %s: revision must be an integer of at least 1", id), why;
	if (!json_is_array(files) || json_array_size(files) == 0 || json_array_size(files) > FILES_MAX)
		return snprintf(why, size, "skill %s: files must be a non-empty array", id), why;
	size_t n = json_array_size(files), i;
	json_t **sorted = calloc(n, sizeof(*sorted)), *f;
	bool has_skill_md = false;
	json_array_foreach(files, i, f) {
		char rel[SBX_REMOTE_PATH_MAX + 1];
		const char *path = json_string_value(json_object_get(f, "path"));
		const char *content = json_string_value(json_object_get(f, "content"));
		json_t *fsize = json_object_get(f, "size");
		if (!path || !sbx_remote_rel_path(path, rel, sizeof(rel)) || strcmp(rel, path) != 0 || !content) {
			free(sorted);
			return snprintf(why, size, "skill %s: file %zu needs a clean relative path and content", id, i), why;
		}
		size_t clen = json_string_length(json_object_get(f, "content")), blen = 0;
		unsigned char *bytes = malloc(clen / 4 * 3 + 1);
		if (!bytes || !sbx_base64_decode(content, clen, bytes, &blen)) {
			free(bytes);
			free(sorted);
			return snprintf(why, size, "skill %s: %s is not canonical base64", id, path), why;
		}
		if (!json_is_integer(fsize) || (size_t)json_integer_value(fsize) != blen) {
			free(bytes);
			free(sorted);
			return snprintf(why, size, "skill %s: %s size does not match its content", id, path), why;
		}
		char sha[SBX_SHA256_HEX_LEN + 1];
		sbx_sha256_hex(bytes, blen, sha);
		const char *fhash = json_string_value(json_object_get(f, "hash"));
		if (fhash && strcmp(fhash, sha) != 0) {
			free(bytes);
			free(sorted);
			return snprintf(why, size, "skill %s: %s hash does not match its content", id, path), why;
		}
		json_object_set_new(f, "\x01bytes", json_stringn_nocheck((const char *)bytes, blen));
		free(bytes);
		has_skill_md = has_skill_md || !strcmp(path, "SKILL.md");
		sorted[i] = f;
	}
	qsort(sorted, n, sizeof(*sorted), by_path);
	for (i = 1; i < n; i++)
		if (!by_path(&sorted[i - 1], &sorted[i])) {
			free(sorted);
			return snprintf(why, size, "skill %s: a path appears twice", id), why;
		}
	if (!has_skill_md) {
		free(sorted);
		return snprintf(why, size, "skill %s has no SKILL.md", id), why;
	}
	/* hash = SHA-256 of "<bytes of path>:<path>:<size>:" + content, by path. */
	struct sbx_sha256 *h = sbx_sha256_new();
	for (i = 0; i < n; i++) {
		const char *path = json_string_value(json_object_get(sorted[i], "path"));
		json_t *b = json_object_get(sorted[i], "\x01bytes");
		skills_hash_file(h, path, json_string_length(b));
		sbx_sha256_update(h, json_string_value(b), json_string_length(b));
	}
	free(sorted);
	char sha[SBX_SHA256_HEX_LEN + 1];
	sbx_sha256_final(h, sha);
	if (strcmp(sbx_json_string_or(skill, "hash", ""), sha) != 0)
		return snprintf(why, size, "skill %s: hash does not match its files", id), why;
	return NULL;
}

static int write_files(const char *dir, json_t *skills)
{
	size_t i, k;
	json_t *s, *f;
	json_array_foreach(skills, i, s) {
		char base[PATH_MAX + 200];
		snprintf(base, sizeof(base), "%s/%s", dir, json_string_value(json_object_get(s, "id")));
		if (mkdir(base, 0755) != 0)
			return -1;
		int root = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		json_array_foreach(json_object_get(s, "files"), k, f) {
			const char *leaf;
			json_t *b = json_object_get(f, "\x01bytes");
			int parent = root < 0 ? -1 : sbx_beneath_parent(root, json_string_value(json_object_get(f, "path")), true, &leaf);
			int fd = parent < 0 ? -1 : openat(parent, leaf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
			bool ok = fd >= 0 && sbx_write_all(fd, json_string_value(b), json_string_length(b)) == 0 && fsync(fd) == 0;
			if (fd >= 0)
				close(fd);
			if (parent >= 0)
				close(parent);
			if (!ok) {
				if (root >= 0)
					close(root);
				return -1;
			}
		}
		if (root >= 0)
			close(root);
	}
	return 0;
}

static enum MHD_Result store(struct req *r)
{
	enum MHD_Result sent;
	char why[600], id[SBX_SHA256_HEX_LEN + 1], dir[PATH_MAX], final[PATH_MAX + 80], tmp[PATH_MAX + 80];
	struct sbx_error e;
	json_t *doc = body_object(r, &sent);
	if (!doc)
		return sent;
	json_t *skills = json_object_get(doc, "skills");
	if (!json_is_array(skills) || json_array_size(skills) == 0 || json_array_size(skills) > SKILLS_MAX) {
		json_decref(doc);
		return reply_error(r, 400, "Skill package integrity check failed: skills must be a non-empty array");
	}
	size_t i;
	json_t *s;
	json_array_foreach(skills, i, s) {
		const char *problem = json_is_object(s) ? check_skill(s, why, sizeof(why)) : "a skill must be an object";
		for (size_t k = 0; !problem && k < i; k++)
			if (!strcmp(json_string_value(json_object_get(json_array_get(skills, k), "id")),
				    json_string_value(json_object_get(s, "id"))))
				problem = "a skill id appears twice";
		if (problem) {
			json_decref(doc);
			return reply_error(r, 400, "Skill package integrity check failed: %s", problem);
		}
	}
	skills_package_id(skills, id);
	const char *claimed = json_string_value(json_object_get(doc, "id"));
	if (claimed && strcmp(claimed, id) != 0) {
		sent = reply_error(r, 400, "Skill package integrity check failed: the package id is %s, not %.80s", id, claimed);
		json_decref(doc);
		return sent;
	}
	skills_packages_dir(dir, sizeof(dir));
	snprintf(final, sizeof(final), "%.3900s/%s", dir, id);
	snprintf(tmp, sizeof(tmp), "%.3900s/.incoming-%s-XXXXXX", dir, id);
	int rc = 0, held = skills_held_open(final);
	if (held >= 0)
		close(held);
	if (held < 0) {
		rc = sbx_mkdir_p(dir, 0755, &e) == 0 && mkdtemp(tmp) && chmod(tmp, 0755) == 0 && write_files(tmp, skills) == 0 ? 0 : -1;
		int tmpfd = rc == 0 ? open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
		rc = tmpfd >= 0 && skills_write_manifest(tmpfd, skills) == 0 ? 0 : -1;
		if (tmpfd >= 0)
			close(tmpfd);
		int top = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		/* A held copy that failed its check is replaced by the genuine one. */
		if (rc == 0 && held == -2 && top >= 0)
			sbx_remove_tree_at(top, id);
		/* Another upload of the same package may have won: same bytes. */
		if (rc == 0 && (top < 0 || renameat(top, strrchr(tmp, '/') + 1, top, id) != 0) && errno != ENOTEMPTY &&
		    errno != EEXIST)
			rc = -1;
		if (top >= 0) {
			sbx_remove_tree_at(top, strrchr(tmp, '/') + 1);
			close(top);
		}
	}
	json_decref(doc);
	if (rc != 0)
		return reply_error(r, 400, "Cannot store the skill package: %s", strerror(errno));
	return reply_json(r, 200, json_pack("{s:s,s:s}", "id", id, "root", final));
}

enum MHD_Result handle_skills(struct req *r, const char *id)
{
	char dir[PATH_MAX], root[PATH_MAX + 80];
	if (!id)
		return store(r);
	skills_packages_dir(dir, sizeof(dir));
	snprintf(root, sizeof(root), "%.3900s/%s", dir, id);
	json_t *out = json_pack("{s:s}", "id", id);
	/* Held means held intact: a tampered copy reads as not held. */
	int held = skills_held_open(root);
	if (held >= 0) {
		close(held);
		json_object_set_new(out, "root", json_string(root));
	}
	return reply_json(r, 200, out);
}
