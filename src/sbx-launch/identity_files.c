/* identity_files.c — generated passwd/group records, handed to bwrap on pipes
 * (--ro-bind-data): derived from (uid, gid) each launch, never stored. */
#include "identity_files.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/passwd_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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

void sbx_identity_text(uid_t uid, gid_t gid, char *passwd, size_t passwd_size, char *group, size_t group_size)
{
	char name[64];

	user_name(uid, name, sizeof(name));
	snprintf(passwd, passwd_size, "%s:x:%u:%u:sbx sandbox user:/tmp:/bin/sh\n", name, (unsigned)uid,
		 (unsigned)gid);
	snprintf(group, group_size, "%s:x:%u:\n", name, (unsigned)gid);
}

/* A pipe whose read end holds text (far below the pipe's buffer). */
static int data_pipe(const char *text, struct sbx_error *e)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "identity", "pipe: %s", strerror(errno));
		return -1;
	}
	int rc = sbx_write_all(p[1], text, strlen(text));
	close(p[1]);
	if (rc != 0) {
		close(p[0]);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "identity", "writing the identity records: %s", strerror(errno));
		return -1;
	}
	return p[0];
}

int sbx_identity_open(uid_t uid, gid_t gid, struct sbx_identity *id, struct sbx_error *e)
{
	char passwd[256], group[128];

	sbx_identity_text(uid, gid, passwd, sizeof(passwd), group, sizeof(group));
	id->group_fd = -1;
	if ((id->passwd_fd = data_pipe(passwd, e)) < 0 || (id->group_fd = data_pipe(group, e)) < 0) {
		sbx_identity_close(id);
		return -1;
	}
	return 0;
}

void sbx_identity_close(struct sbx_identity *id)
{
	if (id->passwd_fd >= 0)
		close(id->passwd_fd);
	if (id->group_fd >= 0)
		close(id->group_fd);
	id->passwd_fd = id->group_fd = -1;
}
