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
