/* verify.c — a held package hashed against its id, as an upload is: its
 * manifest hashes to the id, every skill's files on disk to the skill's
 * hash there, and nothing else lies beside the skills and the manifest. */
#include "skills.h"
#include "../lib/beneath.h"
#include "../lib/snap_scan.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One regular file's part of its skill's hash; false on anything else. */
static bool hash_file(struct sbx_sha256 *h, int dir, const char *path)
{
	char buf[65536];
	struct stat st;
	int fd = sbx_open_beneath(dir, path, O_RDONLY | O_NONBLOCK, SBX_BENEATH_NO_SYMLINKS);
	bool ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	if (ok)
		skills_hash_file(h, path, (size_t)st.st_size);
	for (off_t left = ok ? st.st_size : 0; ok && left > 0;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		ok = n > 0 && n <= left;
		if (ok) {
			sbx_sha256_update(h, buf, (size_t)n);
			left -= n;
		}
	}
	if (fd >= 0)
		close(fd);
	return ok;
}

/* The skill's files, hashed as an upload is: true when they match. */
static bool skill_matches(int pkg, const char *id, const char *want)
{
	struct sbx_snap_scan scan = { 0 };
	struct sbx_error e;
	char sha[SBX_SHA256_HEX_LEN + 1] = "";
	int dir = sbx_open_beneath(pkg, id, O_PATH | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
	if (dir < 0 || sbx_snap_scan_at(dir, &scan, &e) != 0) {
		if (dir >= 0)
			close(dir);
		return false;
	}
	struct sbx_sha256 *h = sbx_sha256_new();
	bool ok = h != NULL;
	for (size_t i = 0; ok && i < scan.len; i++)
		if (scan.v[i].type != SBX_ENTRY_DIR)
			ok = scan.v[i].type == SBX_ENTRY_FILE && hash_file(h, dir, scan.v[i].path);
	if (h && ok)
		sbx_sha256_final(h, sha);
	else if (h)
		sbx_sha256_free(h);
	sbx_snap_scan_free(&scan);
	close(dir);
	return ok && !strcmp(sha, want);
}

bool verify_hashes(int pkg, const char *id)
{
	char got[SBX_SHA256_HEX_LEN + 1];
	json_t *manifest = store_manifest(pkg), *s;
	bool ok = manifest && json_array_size(manifest) > 0;
	if (ok) {
		skills_package_id(manifest, got);
		ok = !strcmp(got, id);
	}
	size_t i, top = 0;
	json_array_foreach(manifest, i, s) {
		const char *sid = json_string_value(json_object_get(s, "id"));
		const char *hash = json_string_value(json_object_get(s, "hash"));
		ok = ok && sid && strchr(sid, '/') == NULL && sid[0] != '.' && skill_matches(pkg, sid, hash ? hash : "");
	}
	/* Nothing beside the skills and the manifest. */
	struct sbx_snap_scan scan = { 0 };
	struct sbx_error e;
	if (ok && sbx_snap_scan_at(pkg, &scan, &e) == 0) {
		for (i = 0; i < scan.len; i++)
			if (!strchr(scan.v[i].path, '/'))
				top++;
		ok = top == json_array_size(manifest) + 1;
		sbx_snap_scan_free(&scan);
	} else {
		ok = false;
	}
	json_decref(manifest);
	return ok;
}
