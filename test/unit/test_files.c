/* test_files.c — atomic writes (content, mode, no debris, nothing on
 * failure), mkdir -p, realpath containment against symlink escapes, and
 * the fd-relative remote workspace: open, remove, scan and usage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "atomic_file.h"
#include "exitcodes.h"
#include "path.h"
#include "quota.h"
#include "remote_path.h"
#include "snap_scan.h"
#include "tree_remove.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];

static int make_root(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/sbx-files-XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int remove_root(void **state)
{
	(void)state;
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static int entries(const char *dir)
{
	int n = 0;
	DIR *d = opendir(dir);
	for (struct dirent *de; d && (de = readdir(d));)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	if (d)
		closedir(d);
	return n;
}

static void atomic_write_replaces_content_and_sets_mode(void **state)
{
	(void)state;
	char path[PATH_MAX + 16], buf[32] = "";
	struct sbx_error e;
	struct stat st;

	snprintf(path, sizeof(path), "%s/f.json", root);
	assert_int_equal(sbx_atomic_write(path, "old content", 11, 0644, &e), 0);
	assert_int_equal(sbx_atomic_write(path, "new", 3, 0600, &e), 0);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fread(buf, 1, sizeof(buf) - 1, f), 3);
	fclose(f);
	assert_string_equal(buf, "new");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(entries(root), 1); /* no temp file left behind */
}

static void atomic_write_failure_leaves_nothing(void **state)
{
	(void)state;
	char path[PATH_MAX + 32];
	struct sbx_error e;

	snprintf(path, sizeof(path), "%s/missing/f.json", root);
	assert_int_equal(sbx_atomic_write(path, "x", 1, 0600, &e), -1);
	assert_string_equal(e.code, "write-failed");
	assert_non_null(strstr(e.message, "missing/f.json"));
	assert_int_equal(entries(root), 0);
}

static void mkdir_p_creates_every_component(void **state)
{
	(void)state;
	char path[PATH_MAX + 16];
	struct sbx_error e;
	struct stat st;

	snprintf(path, sizeof(path), "%s/a/b/c", root);
	assert_int_equal(sbx_mkdir_p(path, 0700, &e), 0);
	assert_int_equal(sbx_mkdir_p(path, 0700, &e), 0); /* idempotent */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	snprintf(path, sizeof(path), "%s/file", root);
	assert_int_equal(sbx_atomic_write(path, "", 0, 0600, &e), 0);
	snprintf(path, sizeof(path), "%s/file/sub", root);
	assert_int_equal(sbx_mkdir_p(path, 0700, &e), -1);
}

static void within_respects_component_boundaries(void **state)
{
	(void)state;
	assert_true(sbx_path_is_within("/srv/ws", "/srv/ws"));
	assert_true(sbx_path_is_within("/srv/ws", "/srv/ws/a/b"));
	assert_true(sbx_path_is_within("/srv/ws/", "/srv/ws/a"));
	assert_false(sbx_path_is_within("/srv/ws", "/srv/wsx"));
	assert_false(sbx_path_is_within("/srv/ws", "/srv"));
	assert_true(sbx_path_is_within("/", "/anything"));
}

static void resolve_within_refuses_symlink_escapes(void **state)
{
	(void)state;
	char ws[PATH_MAX + 8], link[PATH_MAX + 16], inside[PATH_MAX + 16];
	struct sbx_error e;

	snprintf(ws, sizeof(ws), "%s/ws", root);
	assert_int_equal(sbx_mkdir_p(ws, 0700, &e), 0);
	snprintf(inside, sizeof(inside), "%s/ws/sub", root);
	assert_int_equal(sbx_mkdir_p(inside, 0700, &e), 0);
	snprintf(link, sizeof(link), "%s/ws/out", root);
	assert_int_equal(symlink("/etc", link), 0);

	char *ok = sbx_path_resolve_within(ws, inside, "cwd", &e);
	assert_non_null(ok);
	assert_string_equal(ok, inside);
	free(ok);

	assert_null(sbx_path_resolve_within(ws, link, "cwd", &e));
	assert_int_equal(e.exit_code, SBX_EXIT_POLICY);
	assert_string_equal(e.code, "path-escape");
	assert_non_null(strstr(e.message, "cwd: "));

	snprintf(link, sizeof(link), "%s/ws/sub/../../ws/../", root);
	assert_null(sbx_path_resolve_within(ws, link, "cwd", &e));
	snprintf(link, sizeof(link), "%s/ws/nope", root);
	assert_null(sbx_path_resolve_within(ws, link, "cwd", &e));
	assert_string_equal(e.code, "bad-path");
}

/* <root>/remote-workspaces/a/b with a file, and <root>/out holding a canary. */
static void remote_tree(void)
{
	char p[PATH_MAX + 64];
	struct sbx_error e;
	snprintf(p, sizeof(p), "%s/remote-workspaces/a/b/sub", root);
	assert_int_equal(sbx_mkdir_p(p, 0755, &e), 0);
	snprintf(p, sizeof(p), "%s/remote-workspaces/a/b/sub/f", root);
	assert_int_equal(sbx_atomic_write(p, "12345", 5, 0644, &e), 0);
	snprintf(p, sizeof(p), "%s/out/b", root);
	assert_int_equal(sbx_mkdir_p(p, 0755, &e), 0);
	snprintf(p, sizeof(p), "%s/out/b/canary", root);
	assert_int_equal(sbx_atomic_write(p, "x", 1, 0644, &e), 0);
}

static void remote_workspace_open_refuses_symlinks_and_removes_without_following(void **state)
{
	(void)state;
	char p[PATH_MAX + 64], out[PATH_MAX + 16];
	remote_tree();
	int fd = sbx_remote_workspace_open(root, "a/b", false);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstatat(fd, "sub/f", &st, AT_SYMLINK_NOFOLLOW), 0);
	close(fd);
	assert_int_equal(sbx_remote_workspace_open(root, "a/nope", false), -1);
	assert_int_equal(errno, ENOENT);
	fd = sbx_remote_workspace_open(root, "a/new/key", true);
	assert_true(fd >= 0);
	close(fd);

	/* A parent of the key that is a symlink: refused, and never removed through. */
	snprintf(out, sizeof(out), "%s/out", root);
	snprintf(p, sizeof(p), "%s/remote-workspaces/link", root);
	assert_int_equal(symlink(out, p), 0);
	assert_int_equal(sbx_remote_workspace_open(root, "link/b", true), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(sbx_remote_workspace_remove(root, "link/b"), -1);
	assert_int_equal(errno, ELOOP);
	snprintf(p, sizeof(p), "%s/remote-workspaces/link/b/canary", root);
	assert_int_equal(sbx_remove_tree(p), -1);
	assert_int_equal(errno, ELOOP);
	snprintf(p, sizeof(p), "%s/out/b/canary", root);
	assert_int_equal(access(p, F_OK), 0);

	/* A symlink inside the tree is unlinked itself; the key goes. */
	snprintf(p, sizeof(p), "%s/remote-workspaces/a/b/sub/escape", root);
	assert_int_equal(symlink(out, p), 0);
	assert_int_equal(sbx_remote_workspace_remove(root, "a/b"), 0);
	snprintf(p, sizeof(p), "%s/remote-workspaces/a/b", root);
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof(p), "%s/out/b/canary", root);
	assert_int_equal(access(p, F_OK), 0);
	assert_int_equal(sbx_remote_workspace_remove(root, "a/b"), -1);
	assert_int_equal(errno, ENOENT);
}

static void scan_and_usage_at_an_fd_leave_it_as_it_was(void **state)
{
	(void)state;
	struct sbx_snap_scan s;
	struct sbx_usage u;
	struct sbx_error e;
	remote_tree();
	int fd = sbx_remote_workspace_open(root, "a/b", false);
	assert_true(fd >= 0);
	for (int round = 0; round < 2; round++) { /* the second sees the same: rootfd's offset did not move */
		assert_int_equal(sbx_snap_scan_at(fd, &s, &e), 0);
		assert_int_equal(s.len, 2);
		assert_string_equal(s.v[0].path, "sub");
		assert_string_equal(s.v[1].path, "sub/f");
		sbx_snap_scan_free(&s);
		assert_int_equal(sbx_quota_usage_at(fd, &u, &e), 0);
		assert_int_equal(u.bytes, 5);
		assert_int_equal(u.files, 1);
		sbx_usage_free(&u);
	}
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(atomic_write_replaces_content_and_sets_mode, make_root, remove_root),
		cmocka_unit_test_setup_teardown(atomic_write_failure_leaves_nothing, make_root, remove_root),
		cmocka_unit_test_setup_teardown(mkdir_p_creates_every_component, make_root, remove_root),
		cmocka_unit_test(within_respects_component_boundaries),
		cmocka_unit_test_setup_teardown(resolve_within_refuses_symlink_escapes, make_root, remove_root),
		cmocka_unit_test_setup_teardown(remote_workspace_open_refuses_symlinks_and_removes_without_following,
						make_root, remove_root),
		cmocka_unit_test_setup_teardown(scan_and_usage_at_an_fd_leave_it_as_it_was, make_root, remove_root),
	};
	return cmocka_run_group_tests_name("files", tests, NULL, NULL);
}
