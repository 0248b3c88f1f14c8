/* test_launch_parts.c — the launch's helpers on their own: env name rules,
 * run-as resolution, workspace ownership (symlinks, hardlinks, other
 * filesystems), identity records on pipes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "exitcodes.h"
#include "../../src/sbx-launch/identity_files.h"
#include "launch_env.h"
#include "run_as.h"
#include "workspace_owner.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tmpdir.h"

static void env_names(void **state)
{
	(void)state;
	struct sbx_error e;
	assert_int_equal(sbx_env_name_allowed("MY_VAR", &e), 0);
	assert_int_equal(sbx_env_name_allowed("_x1", &e), 0);
	assert_int_equal(sbx_env_name_allowed("PATH", &e), -1);
	assert_string_equal(e.code, "reserved-env-name");
	assert_int_equal(sbx_env_name_allowed("ASCEND_VISIBLE_DEVICES", &e), -1);
	assert_string_equal(e.code, "reserved-env-name");
	assert_int_equal(sbx_env_name_allowed("LD_AUDIT", &e), -1);
	assert_string_equal(e.code, "blocked-env-name");
	assert_int_equal(sbx_env_name_allowed("9LIVES", &e), -1);
	assert_string_equal(e.code, "bad-env-name");
	assert_int_equal(sbx_env_name_allowed("", &e), -1);
	assert_int_equal(sbx_env_name_allowed("A=B", &e), -1);
}

static void run_as_refuses_root_and_parses_ids(void **state)
{
	(void)state;
	struct sbx_run_as r;
	struct sbx_error e;
	if (geteuid() != 0) {
		assert_int_equal(sbx_run_as_resolve("0", &r, &e), 0);
		assert_false(r.switch_user);
		assert_int_equal(r.uid, geteuid());
		return;
	}
	unsetenv("SBX_RUN_AS");
	assert_int_equal(sbx_run_as_resolve("4242:4343", &r, &e), 0);
	assert_true(r.switch_user);
	assert_int_equal(r.uid, 4242);
	assert_int_equal(r.gid, 4343);
	assert_int_equal(sbx_run_as_resolve("4242", &r, &e), 0);
	assert_int_equal(r.gid, 4242);
	assert_int_equal(sbx_run_as_resolve("0", &r, &e), -1);
	assert_int_equal(e.exit_code, SBX_EXIT_POLICY);
	assert_int_equal(sbx_run_as_resolve("4242:0", &r, &e), -1);
	assert_int_equal(sbx_run_as_resolve("root", &r, &e), -1);
	assert_int_equal(sbx_run_as_resolve("no-such-user-here", &r, &e), -1);
	assert_string_equal(e.code, "bad-run-as");
	assert_int_equal(sbx_run_as_resolve("12:x", &r, &e), -1);
	setenv("SBX_RUN_AS", "5151:5252", 1);
	assert_int_equal(sbx_run_as_resolve(NULL, &r, &e), 0);
	assert_int_equal(r.uid, 5151);
	unsetenv("SBX_RUN_AS");
}

static void path_in(char *out, size_t size, const char *rel)
{
	snprintf(out, size, "%s/%s", dir, rel);
}

static void workspace_ownership_stays_inside(void **state)
{
	(void)state;
	struct sbx_error e;
	char ws[128], p[160], outside[160];
	struct stat st;

	if (geteuid() != 0)
		skip();
	path_in(ws, sizeof(ws), "ws");
	path_in(outside, sizeof(outside), "outside");
	assert_int_equal(mkdir(ws, 0755), 0);
	path_in(p, sizeof(p), "ws/sub");
	assert_int_equal(mkdir(p, 0700), 0);
	path_in(p, sizeof(p), "ws/sub/upload");
	close(open(p, O_CREAT | O_WRONLY, 0600));
	close(open(outside, O_CREAT | O_WRONLY, 0600));
	path_in(p, sizeof(p), "ws/link-out");
	assert_int_equal(symlink(outside, p), 0);
	path_in(p, sizeof(p), "ws/hard");
	assert_int_equal(link(outside, p), 0);

	int wsfd = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(wsfd >= 0);
	long changed = sbx_workspace_own_at(wsfd, ws, 4242, 4343, &e);
	assert_true(changed >= 4); /* ws, sub, upload, the symlink itself */
	path_in(p, sizeof(p), "ws/sub/upload");
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_uid, 4242);
	assert_int_equal(st.st_gid, 4343);
	/* Neither the symlink's target nor a hardlinked outside file changed. */
	assert_int_equal(stat(outside, &st), 0);
	assert_int_equal(st.st_uid, 0);
	path_in(p, sizeof(p), "ws/link-out");
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_uid, 4242);
	/* Already owned: nothing to do the second time. */
	assert_int_equal(sbx_workspace_own_at(wsfd, ws, 4242, 4343, &e), 0);
	close(wsfd);
}

/* The whole of a pipe's content (small). */
static void read_all(int fd, char *out, size_t size)
{
	size_t used = 0;
	ssize_t n;
	while (used < size - 1 && (n = read(fd, out + used, size - 1 - used)) > 0)
		used += (size_t)n;
	out[used] = '\0';
}

static void identity_on_pipes_with_one_record(void **state)
{
	(void)state;
	struct sbx_error e;
	struct sbx_identity id;
	char text[256];

	assert_int_equal(sbx_identity_open(4242, 4343, &id, &e), 0);
	read_all(id.passwd_fd, text, sizeof(text));
	assert_string_equal(text, "sbx:x:4242:4343:sbx sandbox user:/tmp:/bin/sh\n");
	read_all(id.group_fd, text, sizeof(text));
	assert_string_equal(text, "sbx:x:4343:\n");
	/* The write ends are closed: a reader sees the end, never blocks. */
	assert_int_equal(read(id.passwd_fd, text, 1), 0);
	sbx_identity_close(&id);
	assert_int_equal(id.passwd_fd, -1);
	assert_int_equal(id.group_fd, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(env_names),
		cmocka_unit_test(run_as_refuses_root_and_parses_ids),
		cmocka_unit_test_setup_teardown(workspace_ownership_stays_inside, make_dir, remove_dir),
		cmocka_unit_test(identity_on_pipes_with_one_record),
	};
	return cmocka_run_group_tests_name("launch-parts", tests, NULL, NULL);
}
