/* path.c — lexical path checks: containment, plain relative paths, slashes. */
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
