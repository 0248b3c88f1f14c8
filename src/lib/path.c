/* path.c — canonical-path containment checks. */
#include "path.h"
#include "exitcodes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool sbx_path_is_within(const char *root, const char *inner)
{
	size_t n = strlen(root);

	if (strcmp(root, "/") == 0)
		return inner[0] == '/';
	while (n > 1 && root[n - 1] == '/')
		n--;
	if (strncmp(root, inner, n) != 0)
		return false;
	return inner[n] == '\0' || inner[n] == '/';
}

char *sbx_path_resolve_within(const char *root, const char *path, const char *what,
			      struct sbx_error *e)
{
	char *real_root = realpath(root, NULL);
	if (!real_root) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%s: root %.200s cannot be resolved: %s",
			      what, root, strerror(errno));
		return NULL;
	}
	char *real = realpath(path, NULL);
	if (!real) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%s: %.200s cannot be resolved: %s",
			      what, path, strerror(errno));
		free(real_root);
		return NULL;
	}
	if (!sbx_path_is_within(real_root, real)) {
		sbx_error_set(e, SBX_EXIT_POLICY, "path-escape", "%s: %.200s resolves to %.200s, outside %.200s",
			      what, path, real, real_root);
		free(real);
		real = NULL;
	}
	free(real_root);
	return real;
}

int sbx_path_fold_slashes(const char *p, char *out, size_t size)
{
	size_t n = 0;
	for (; *p; p++) {
		if (*p == '/' && (n == 0 || out[n - 1] == '/'))
			continue;
		if (n + 1 >= size)
			return errno = ENAMETOOLONG, -1;
		out[n++] = *p;
	}
	while (n > 0 && out[n - 1] == '/')
		n--;
	out[n] = '\0';
	return 0;
}

bool sbx_path_plain_relative(const char *p)
{
	if (!*p || *p == '/')
		return false;
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		s += n;
		if (*s == '/' && !*++s)
			return false;
	}
	return true;
}
