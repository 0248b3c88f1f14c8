/* tmpdir.h — a scratch directory per cmocka test: make_dir as setup,
 * remove_dir as teardown; its path is in `dir`. */
#ifndef SBX_TEST_TMPDIR_H
#define SBX_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

static char dir[64];

static int make_dir(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sbx-unit-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

#endif
