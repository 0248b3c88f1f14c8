/* passwd_file.c — scanning /etc/passwd with fgetpwent. */
#include "passwd_file.h"

#include <pwd.h>
#include <stdio.h>
#include <string.h>

bool sbx_passwd_lookup(const char *name, uid_t uid, struct sbx_passwd_entry *out)
{
	FILE *f = fopen("/etc/passwd", "re");
	struct passwd *pw;
	bool found = false;

	if (!f)
		return false;
	while (!found && (pw = fgetpwent(f))) {
		if (name ? strcmp(pw->pw_name, name) != 0 : pw->pw_uid != uid)
			continue;
		if (strlen(pw->pw_name) >= sizeof(out->name))
			continue;
		memcpy(out->name, pw->pw_name, strlen(pw->pw_name) + 1);
		out->uid = pw->pw_uid;
		out->gid = pw->pw_gid;
		found = true;
	}
	fclose(f);
	return found;
}
