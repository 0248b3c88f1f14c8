/* program_path.c — where a program is: found like execvp does, or next to
 * the running executable (bin/sbx-launch beside bin/sbx-run). */
#include "program_path.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_executable_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

bool sbx_find_executable(const char *name, char *out, size_t size)
{
	if (strchr(name, '/')) {
		if (!is_executable_file(name))
			return false;
		char *real = realpath(name, NULL);
		if (!real)
			return false;
		bool ok = strlen(real) < size;
		if (ok)
			memcpy(out, real, strlen(real) + 1);
		free(real);
		return ok;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);
		char candidate[PATH_MAX];
		/* An empty PATH entry means the current directory, as in execvp. */
		int len = snprintf(candidate, sizeof(candidate), "%.*s/%s", (int)(n ? n : 1),
				   n ? path : ".", name);
		if (len > 0 && (size_t)len < sizeof(candidate) && is_executable_file(candidate))
			return sbx_find_executable(candidate, out, size);
		path += n + (colon ? 1 : 0);
	}
	return false;
}

int sbx_sibling_program(const char *name, char *out, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			if (snprintf(out, size, "%s/%s", self, name) < (int)size && access(out, X_OK) == 0)
				return 0;
		}
	}
	return sbx_find_executable(name, out, size) ? 0 : -1;
}
