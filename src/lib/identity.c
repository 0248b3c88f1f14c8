/* identity.c — generated passwd/group records, published by rename so a
 * concurrent launch never binds a half-written file. */
#include "identity.h"
#include "atomic_file.h"
#include "exitcodes.h"
#include "io.h"
#include "passwd_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The host's name for uid when it is a plain name, else "sbx". */
static void user_name(uid_t uid, char *out, size_t size)
{
	struct sbx_passwd_entry pw;
	bool found = sbx_passwd_lookup(NULL, uid, &pw);

	snprintf(out, size, "sbx");
	if (!found || !pw.name[0] || strlen(pw.name) >= size)
		return;
	for (const char *p = pw.name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '.' || *p == '_' || *p == '-'))
			return;
	snprintf(out, size, "%s", pw.name);
}

/* Writes path unless it already holds exactly text. */
static int ensure(const char *path, const char *text, struct sbx_error *e)
{
	struct sbx_error ignored;
	size_t len;
	char *have = sbx_read_file_capped(path, 4096, &len, &ignored);
	int same = have && len == strlen(text) && memcmp(have, text, len) == 0;

	free(have);
	if (same)
		return 0;
	return sbx_atomic_write(path, text, strlen(text), 0644, e);
}

int sbx_identity_files(const char *data_dir, uid_t uid, gid_t gid, struct sbx_identity *id,
		       struct sbx_error *e)
{
	char dir[PATH_MAX], name[64], passwd[256], group[128];

	if (snprintf(dir, sizeof(dir), "%s/runtime/identity", data_dir) >= (int)sizeof(dir) ||
	    snprintf(id->passwd, sizeof(id->passwd), "%s/passwd-%u-%u", dir, (unsigned)uid, (unsigned)gid) >= (int)sizeof(id->passwd) ||
	    snprintf(id->group, sizeof(id->group), "%s/group-%u-%u", dir, (unsigned)uid, (unsigned)gid) >= (int)sizeof(id->group)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "path-too-long", "data directory path too long");
		return -1;
	}
	if (sbx_mkdir_p(dir, 0755, e) != 0)
		return -1;
	user_name(uid, name, sizeof(name));
	snprintf(passwd, sizeof(passwd), "%s:x:%u:%u:sbx sandbox user:/tmp:/bin/sh\n", name,
		 (unsigned)uid, (unsigned)gid);
	snprintf(group, sizeof(group), "%s:x:%u:\n", name, (unsigned)gid);
	if (ensure(id->passwd, passwd, e) != 0 || ensure(id->group, group, e) != 0)
		return -1;
	return 0;
}
