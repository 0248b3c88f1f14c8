/* manifest.c — a held package's manifest, read beneath the package's fd
 * (no symlink, a regular file, at most 1 MiB): the JSON array of skills. */
#include "skills.h"
#include "../lib/beneath.h"
#include "../lib/io.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define MANIFEST_CAP (1u << 20)

json_t *store_manifest(int pkg)
{
	int fd = sbx_open_beneath(pkg, SKILLS_MANIFEST, O_RDONLY | O_NONBLOCK, SBX_BENEATH_NO_SYMLINKS);
	struct stat st;
	struct sbx_error e;
	json_t *doc = NULL;
	char *text = NULL;
	size_t len;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (text = sbx_read_fd_capped(fd, MANIFEST_CAP, &len, SKILLS_MANIFEST, &e)))
		doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	free(text);
	if (fd >= 0)
		close(fd);
	return json_is_array(doc) ? doc : (json_decref(doc), NULL);
}
