/* skills_call.c — skill packages (runner-api 4 rows 30-31, 5.7) as
 * sbx-skills children: POST and GET answered from its JSON, and the
 * package an execution mounts opened here and verified there, on its fd. */
#include "skills_call.h"
#include "server.h"
#include "metrics.h"
#include "reply.h"
#include "body.h"
#include "../lib/beneath.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/stage_call.h"
#include "../lib/datadir.h"

#include <limits.h>
#include <jansson.h>
#include <microhttpd.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SKILLS_OUTPUT_CAP (1u << 20)

/* Runs sbx-skills --data-dir D ARGS (body on stdin, fd as its fd 3). */
static json_t *call(const char *const *args, const char *body, size_t len, int fd, struct sbx_error *e)
{
	const char *argv[12] = { g_server.prog.skills, "--data-dir", g_server.cfg.data_dir };
	int n = 3, in = -1;
	for (int i = 0; args[i] && n < 11; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (body)
		in = body_memfd(body, len);
	if (body && in < 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "internal", "Cannot store the skill package: %s", strerror(errno));
		return NULL;
	}
	struct sbx_spawn s = { .argv = argv, .stdin_fd = in, .die_with_parent = true, .extra_fds = &fd,
			       .n_extra = fd >= 0 ? 1 : 0 };
	json_t *out = sbx_stage_call(&s, 0, SKILLS_OUTPUT_CAP, e);
	metrics_stage_call(g_server.prog.skills, out != NULL, e);
	if (in >= 0)
		close(in);
	return out;
}

enum MHD_Result handle_skills(struct req *r, const char *id)
{
	struct sbx_error e;
	json_t *out;
	if (!id) {
		if (r->too_large)
			return reply_error(r, 400, "Request body exceeds the %zu byte limit", request_body_limit(r));
		const char *args[] = { "put", "-", NULL };
		out = call(args, r->body ? r->body : "", r->len, -1, &e);
	} else {
		/* Held means held intact: a tampered copy reads as not held. */
		const char *args[] = { "get", id, NULL };
		out = call(args, NULL, 0, -1, &e);
	}
	return out ? reply_json(r, 200, out) : reply_error(r, 400, "%s", e.message);
}

int skills_verify_fd(int pkg, const char *id)
{
	struct sbx_error e;
	const char *args[] = { "verify", "--fd", "3", id, NULL };
	json_t *out = call(args, NULL, 0, pkg, &e);
	if (out) {
		json_decref(out);
		return 0;
	}
	if (!strcmp(e.code, "integrity"))
		return -2;
	if (strcmp(e.code, "not-held") != 0)
		sbx_diag("warning", "skills", NULL, "sbx-skills verify %s: %s", id, e.message);
	return -1;
}

int skills_open_held(const char *root, char id[65])
{
	char dir[PATH_MAX], rel[PATH_MAX];
	sbx_data_path(g_server.cfg.data_dir, SBX_DATA_SKILL_PACKAGES, NULL, dir, sizeof(dir));
	if (sbx_path_below(dir, root, rel, sizeof(rel)) != 0 || strlen(rel) != 64 || strspn(rel, "0123456789abcdef") != 64)
		return -1;
	/* Opened here, below the store with no symlink, and verified on this
	 * very fd: what sbx-skills checked is what sbx-run binds. */
	int top = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int pkg = top < 0 ? -1 : sbx_open_beneath(top, rel, O_RDONLY | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
	if (top >= 0)
		close(top);
	if (pkg < 0)
		return -1;
	int rc = skills_verify_fd(pkg, rel);
	if (rc != 0) {
		close(pkg);
		return rc;
	}
	memcpy(id, rel, 65);
	return pkg;
}
