/* remote_path.c — the key and path grammars of remote workspaces, and a
 * workspace opened through the no-symlink parent (beneath.h): sbx-httpd
 * checks requests with them, sbx-ws works beneath the fd. */
#include "remote_path.h"
#include "beneath.h"
#include "text.h"
#include "datadir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool segments_ok(const char *s, bool strict_chars)
{
	if (!*s || *s == '/' || strchr(s, '\\'))
		return false;
	const char *p = s;
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (strict_chars) {
			for (size_t i = 0; i < n; i++) {
				char c = p[i];
				if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
				      c == '.' || c == '_' || c == '-'))
					return false;
			}
		}
		p += n;
		if (*p == '/' && !*++p)
			return false; /* a trailing '/' is an empty segment */
	}
	return true;
}

static bool trimmed_into(const char *raw, char *out, size_t size, size_t max)
{
	char *t = raw ? sbx_trim_dup(raw, strlen(raw)) : NULL;
	bool ok = t && strlen(t) <= max && strlen(t) < size;
	if (ok)
		strcpy(out, t);
	free(t);
	return ok;
}

bool sbx_remote_key(const char *raw, char *out, size_t size)
{
	return trimmed_into(raw, out, size, SBX_REMOTE_KEY_MAX) && segments_ok(out, true);
}

bool sbx_remote_rel_path(const char *raw, char *out, size_t size)
{
	if (!trimmed_into(raw, out, size, SBX_REMOTE_PATH_MAX) || !segments_ok(out, false))
		return false;
	for (const char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20)
			return false;
	return true;
}

int sbx_remote_workspaces_root(const char *data_dir, bool create)
{
	int data = open(data_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (data < 0)
		return -1;
	int fd = sbx_beneath_step(data, sbx_data_layout[SBX_DATA_REMOTE_WORKSPACES].name, create);
	int saved = errno;
	close(data);
	errno = saved;
	return fd;
}

int sbx_remote_workspace_open(const char *data_dir, const char *key, bool create)
{
	char with_slash[SBX_REMOTE_KEY_MAX + 8];
	const char *leaf;
	if (snprintf(with_slash, sizeof(with_slash), "%s/x", key) >= (int)sizeof(with_slash))
		return errno = ENAMETOOLONG, -1;
	int root = sbx_remote_workspaces_root(data_dir, create);
	if (root < 0)
		return -1;
	/* Every component, the last included, is a real directory. */
	int fd = sbx_beneath_parent(root, with_slash, create, &leaf);
	int saved = errno;
	close(root);
	errno = saved;
	return fd;
}
