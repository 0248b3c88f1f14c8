/* datadir.c — resolving the default data directory from the environment. */
#include "datadir.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int fits(int n, size_t size)
{
	return n >= 0 && (size_t)n < size ? 0 : -1;
}

int sbx_data_dir(char *out, size_t size)
{
	const char *v;

	if ((v = getenv("SBX_DATA_DIR")) && *v)
		return fits(snprintf(out, size, "%s", v), size);
	if ((v = getenv("SCIENCE_AGENT_DATA_DIR")) && *v)
		return fits(snprintf(out, size, "%s", v), size);
	if (geteuid() == 0)
		return fits(snprintf(out, size, "/var/lib/sbx"), size);
	if ((v = getenv("XDG_STATE_HOME")) && *v == '/')
		return fits(snprintf(out, size, "%s/sbx", v), size);
	if ((v = getenv("HOME")) && *v == '/')
		return fits(snprintf(out, size, "%s/.local/state/sbx", v), size);
	return fits(snprintf(out, size, "/tmp/sbx-%u", (unsigned)geteuid()), size);
}
