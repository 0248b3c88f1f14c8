/* wheels.c — local wheels (environments.md 1.10): a workspace-relative
 * path, opened below the workspace fd (RESOLVE_BENEATH), a regular file, hashed before and after
 * its copy into wheels/<sha256>/<filename>; pip only ever sees that copy. */
#include "env.h"
#include "../lib/uuid.h"
#include "../lib/exitcodes.h"
#include "../lib/beneath.h"
#include "../lib/host_dir.h"
#include "../lib/path.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(struct sbx_error *e, const char *fmt, const char *a)
{
	sbx_error_set(e, SBX_EXIT_USAGE, "bad-wheel", fmt, a);
	return -1;
}

/* SHA-256 (hex) and size of what fd holds, read to the end; when copy_to
 * >= 0 the bytes are written there too. */
static int hash_fd(int fd, int copy_to, char hex[65], off_t *size)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char buf[65536], out[32];
	unsigned int len = 0;
	ssize_t n;
	*size = 0;
	if (!md)
		return -1;
	EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		EVP_DigestUpdate(md, buf, (size_t)n);
		*size += n;
		for (ssize_t off = 0; copy_to >= 0 && off < n;) {
			ssize_t w = write(copy_to, buf + off, (size_t)(n - off));
			if (w <= 0) {
				EVP_MD_CTX_free(md);
				return -1;
			}
			off += w;
		}
	}
	EVP_DigestFinal_ex(md, out, &len);
	EVP_MD_CTX_free(md);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", out[i]);
	return n < 0 ? -1 : 0;
}

static int hash_path(const char *path, char hex[65], off_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int rc = fd >= 0 ? hash_fd(fd, -1, hex, size) : -1;
	if (fd >= 0)
		close(fd);
	return rc;
}

int env_store_wheel(struct envctx *c, const char *workspace, const char *rel, json_t **record, char *stored,
		    size_t size, struct sbx_error *e)
{
	if (!workspace || !*workspace)
		return fail(e, "%s", "Local wheel paths require a Session workspace");
	size_t n = strlen(rel);
	if (n == 0 || n > 512 || rel[0] == '/')
		return fail(e, "%s", "Local wheel paths must be non-empty workspace-relative paths of at most 512 characters");
	if (!sbx_path_plain_relative(rel))
		return fail(e, "Local wheel path escapes the Session workspace: %s", rel);
	/* The workspace once ("fd:N" from sbx-httpd, or a path), the wheel
	 * below it: symlinks that stay inside are followed by the kernel,
	 * anything that leaves is refused; never reopened by name. */
	struct sbx_host_dir ws;
	struct sbx_error we;
	if (sbx_host_dir_open(workspace, "workspace", &ws, &we) != 0)
		return fail(e, "Local wheel paths require a Session workspace: %s", workspace);
	int src = sbx_open_beneath(ws.fd, rel, O_RDONLY | O_NONBLOCK, SBX_BENEATH_IN_ROOT);
	int saved = errno;
	sbx_host_dir_close(&ws);
	if (src < 0 && saved == ENOENT) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-wheel", "ENOENT: no such file or directory, realpath '%.900s'", rel);
		return -1;
	}
	if (src < 0 && (saved == EXDEV || saved == ELOOP || saved == EINVAL))
		return fail(e, "Local wheel path escapes the Session workspace: %s", rel);
	struct stat st;
	if (src < 0 || fstat(src, &st) != 0 || !S_ISREG(st.st_mode)) {
		if (src >= 0)
			close(src);
		return fail(e, "%s", "Local wheel must be a regular file");
	}
	char first[65], second[65], incoming[PATH_MAX + 64], dir[PATH_MAX + 96];
	off_t first_size, copied_size;
	/* Hashed, then copied from the same fd and hashed again. */
	if (hash_fd(src, -1, first, &first_size) != 0 || lseek(src, 0, SEEK_SET) != 0) {
		close(src);
		return fail(e, "Local wheel cannot be read: %s", rel);
	}
	char uuid[48];
	sbx_uuid4("", uuid, sizeof(uuid));
	snprintf(incoming, sizeof(incoming), "%s/wheels/.incoming-%s.whl", c->root, uuid);
	int dst = open(incoming, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	int rc = dst >= 0 ? hash_fd(src, dst, second, &copied_size) : -1;
	close(src);
	if (dst >= 0 && (fsync(dst) != 0 || close(dst) != 0))
		rc = -1;
	if (rc != 0 || strcmp(first, second) || first_size != copied_size) {
		unlink(incoming);
		return fail(e, "%s", rc ? "Local wheel cannot be copied" : "Local wheel changed while it was copied");
	}
	const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	snprintf(dir, sizeof(dir), "%s/wheels/%s", c->root, first);
	if (snprintf(stored, size, "%s/%s", dir, base) >= (int)size) {
		unlink(incoming);
		return fail(e, "%s", "Local wheel name is too long");
	}
	mkdir(dir, 0755);
	if (access(stored, F_OK) == 0) {
		char have[65];
		off_t have_size;
		unlink(incoming);
		if (hash_path(stored, have, &have_size) != 0 || strcmp(have, first) || have_size != first_size)
			return fail(e, "%s", "Stored local wheel failed integrity verification");
	} else if (rename(incoming, stored) != 0) {
		unlink(incoming);
		return fail(e, "Local wheel cannot be stored: %s", strerror(errno));
	}
	/* name-version-...-tag.whl: at least five fields give distribution and version. */
	char fields[256];
	snprintf(fields, sizeof(fields), "%.*s", (int)(strlen(base) - 4), base);
	char *parts[8];
	int k = 0;
	for (char *save = NULL, *t = strtok_r(fields, "-", &save); t && k < 8; t = strtok_r(NULL, "-", &save))
		parts[k++] = t;
	*record = json_pack("{s:{s:s,s:I},s:s,s:s,s:s}", "content", "hash", first, "size", (json_int_t)first_size,
			    "filename", base, "manager", "pip", "sourcePath", rel);
	if (k >= 5) {
		for (char *p = parts[0]; *p; p++)
			if (*p == '_')
				*p = '-';
		json_object_set_new(*record, "distribution", json_string(parts[0]));
		json_object_set_new(*record, "version", json_string(parts[1]));
	}
	return 0;
}
