/* test_files.c — atomic writes (content, mode, no debris, nothing on
 * failure), mkdir -p, realpath containment against symlink escapes, and
 * the fd-relative remote workspace: open, remove, scan and usage; the
 * usage walk's stop at a limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "atomic_file.h"
#include "exitcodes.h"
#include "path.h"
#include "beneath.h"
#include "host_dir.h"
#include "quota.h"
#include "remote_path.h"
#include "../../src/sbx-ws/ws.h"
#include "snap_scan.h"
#include "tree_remove.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <sys/syscall.h>
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

/* root/a/b/file, root/a/in -> b (inside), root/a/out -> / (outside),
 * root/a/lnk -> b used as a directory on the way. */
static int beneath_tree(void)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/a/b", root);
	struct sbx_error e;
	if (sbx_mkdir_p(p, 0755, &e) != 0)
		return -1;
	snprintf(p, sizeof(p), "%s/a/b/file", root);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	snprintf(p, sizeof(p), "%s/a/in", root);
	if (symlink("b", p) != 0)
		return -1;
	snprintf(p, sizeof(p), "%s/a/out", root);
	if (symlink("/", p) != 0)
		return -1;
	return open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static void open_beneath_refuses_every_symlink_and_escape(void **state)
{
	(void)state;
	int fd, rootfd = beneath_tree();
	assert_true(rootfd >= 0);
	/* Plain paths open, by either route. */
	assert_true((fd = sbx_open_beneath(rootfd, "a/b/file", O_RDONLY, SBX_BENEATH_NO_SYMLINKS)) >= 0);
	close(fd);
	assert_true((fd = sbx_open_beneath_walk(rootfd, "a/b/file", O_RDONLY)) >= 0);
	close(fd);
	assert_true((fd = sbx_open_beneath(rootfd, "", O_PATH | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS)) >= 0);
	assert_true(sbx_same_file(fd, rootfd));
	close(fd);
	/* A symlink on the way or at the end: ELOOP, for both routes. */
	static const char *const links[] = { "a/in/file", "a/in", "a/out/etc", "a/out" };
	for (size_t i = 0; i < 4; i++) {
		errno = 0;
		assert_int_equal(sbx_open_beneath(rootfd, links[i], O_PATH, SBX_BENEATH_NO_SYMLINKS), -1);
		assert_int_equal(errno, ELOOP);
		errno = 0;
		assert_int_equal(sbx_open_beneath_walk(rootfd, links[i], O_PATH), -1);
		assert_int_equal(errno, ELOOP);
	}
	/* Reads may follow a symlink that stays inside, never one that leaves
	 * (without openat2, e.g. under valgrind, the walk refuses both). */
	fd = sbx_open_beneath(rootfd, "a/in/file", O_RDONLY, SBX_BENEATH_IN_ROOT);
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC };
	int probe = (int)syscall(SYS_openat2, rootfd, ".", &how, sizeof(how));
	bool have_openat2 = probe >= 0 || errno != ENOSYS;
	if (probe >= 0)
		close(probe);
	if (have_openat2) {
		assert_true(fd >= 0);
		close(fd);
	} else {
		assert_int_equal(fd, -1);
	}
	assert_int_equal(sbx_open_beneath(rootfd, "a/out/etc/passwd", O_RDONLY, SBX_BENEATH_IN_ROOT), -1);
	/* EXDEV from openat2; the walk (no openat2, e.g. under valgrind) refuses every symlink. */
	assert_true(errno == EXDEV || errno == ELOOP);
	/* Not plain: refused before any lookup. */
	static const char *const bad[] = { "/etc/passwd", "a/../a", "./a", "a//b", "a/" };
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(sbx_open_beneath(rootfd, bad[i], O_RDONLY, SBX_BENEATH_IN_ROOT), -1);
		assert_int_equal(errno, EINVAL);
	}
	close(rootfd);
}

static void path_below_splits_at_component_boundaries(void **state)
{
	(void)state;
	char rel[PATH_MAX];
	assert_int_equal(sbx_path_below("/d/projects", "/d/projects/p1//sub/", rel, sizeof(rel)), 0);
	assert_string_equal(rel, "p1/sub");
	assert_int_equal(sbx_path_below("/d/projects/", "/d/projects", rel, sizeof(rel)), 0);
	assert_string_equal(rel, "");
	assert_int_equal(sbx_path_below("/d/projects", "/d/projectsX/p", rel, sizeof(rel)), -1);
	assert_int_equal(sbx_path_below("/d/projects", "/d/other", rel, sizeof(rel)), -1);
	/* ".." stays in rel, for sbx_open_beneath to refuse. */
	assert_int_equal(sbx_path_below("/d/projects", "/d/projects/../x", rel, sizeof(rel)), 0);
	assert_false(sbx_path_plain_relative(rel));
}

static void host_dir_takes_a_path_or_an_inherited_fd(void **state)
{
	(void)state;
	struct sbx_host_dir d;
	struct sbx_error e;
	char ref[32], p[PATH_MAX];
	int rootfd = beneath_tree();
	assert_int_equal(sbx_host_dir_open(root, "workspace", &d, &e), 0);
	assert_true(d.fd >= 32 && sbx_same_file(d.fd, rootfd));
	assert_string_equal(d.path, root);
	sbx_host_dir_close(&d);
	snprintf(ref, sizeof(ref), "fd:%d", rootfd);
	assert_int_equal(sbx_host_dir_open(ref, "workspace", &d, &e), 0);
	assert_true(d.fd != rootfd && sbx_same_file(d.fd, rootfd));
	struct sbx_host_dir sub;
	assert_int_equal(sbx_host_dir_beneath(&d, "a/b", "cwd", &sub, &e), 0);
	snprintf(p, sizeof(p), "%s/a/b", root);
	assert_string_equal(sub.path, p);
	sbx_host_dir_close(&sub);
	assert_int_equal(sbx_host_dir_beneath(&d, "a/in", "cwd", &sub, &e), -1);
	assert_non_null(strstr(e.message, "cwd: a/in: a symbolic link on the path (refused)"));
	assert_int_equal(sbx_host_dir_beneath(&d, "a/b/file", "cwd", &sub, &e), -1);
	assert_non_null(strstr(e.message, "is not a directory"));
	sbx_host_dir_close(&d);
	assert_int_equal(sbx_host_dir_open("fd:999", "workspace", &d, &e), -1);
	assert_non_null(strstr(e.message, "workspace: fd:999: no such open descriptor"));
	assert_int_equal(sbx_host_dir_open("relative", "workspace", &d, &e), -1);
	assert_int_equal(sbx_host_dir_open("fd:1", "workspace", &d, &e), -1);
	snprintf(p, sizeof(p), "%s/a/b/file", root);
	assert_int_equal(sbx_host_dir_open(p, "workspace", &d, &e), -1);
	assert_non_null(strstr(e.message, "is not a directory"));
	close(rootfd);
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

/* A capped walk ends at the first limit crossed: a check never costs more
 * than max_files names, whatever the tree holds. */
static void usage_walk_stops_at_the_first_limit_crossed(void **state)
{
	(void)state;
	char p[PATH_MAX + 64];
	struct sbx_usage u;
	struct sbx_error e;
	for (int i = 0; i < 50; i++) {
		snprintf(p, sizeof(p), "%s/e%d", root, i);
		assert_int_equal(sbx_atomic_write(p, "", 0, 0644, &e), 0);
	}
	snprintf(p, sizeof(p), "%s/link", root);
	assert_int_equal(symlink("a-target-that-takes-forty-bytes-or-so...", p), 0);
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(sbx_quota_usage_at(fd, &u, &e), 0);
	assert_false(u.stopped);
	assert_int_equal(u.entries, 51);
	assert_int_equal(u.inodes, 51);
	assert_int_equal(u.symlinks, 1);
	assert_true(u.charged_bytes >= 40); /* the target's length, at least */
	sbx_usage_free(&u);
	assert_int_equal(sbx_quota_usage_capped_at(fd, 0, 10, &u, &e), 0);
	assert_true(u.stopped);
	assert_int_equal(u.entries, 11);
	assert_true(u.inodes <= 10);
	sbx_usage_free(&u);
	assert_int_equal(sbx_quota_usage_capped_at(fd, 20, 0, &u, &e), 0);
	assert_true(u.stopped); /* the symlink alone is charged more than 20 bytes */
	assert_true(u.charged_bytes > 20);
	sbx_usage_free(&u);
	assert_int_equal(sbx_quota_usage_capped_at(fd, 1 << 20, 100, &u, &e), 0);
	assert_false(u.stopped);
	assert_int_equal(u.entries, 51);
	sbx_usage_free(&u);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(atomic_write_replaces_content_and_sets_mode, make_root, remove_root),
		cmocka_unit_test_setup_teardown(atomic_write_failure_leaves_nothing, make_root, remove_root),
		cmocka_unit_test_setup_teardown(mkdir_p_creates_every_component, make_root, remove_root),
		cmocka_unit_test(within_respects_component_boundaries),
		cmocka_unit_test_setup_teardown(open_beneath_refuses_every_symlink_and_escape, make_root, remove_root),
		cmocka_unit_test(path_below_splits_at_component_boundaries),
		cmocka_unit_test_setup_teardown(host_dir_takes_a_path_or_an_inherited_fd, make_root, remove_root),
		cmocka_unit_test_setup_teardown(remote_workspace_open_refuses_symlinks_and_removes_without_following,
						make_root, remove_root),
		cmocka_unit_test_setup_teardown(scan_and_usage_at_an_fd_leave_it_as_it_was, make_root, remove_root),
		cmocka_unit_test_setup_teardown(usage_walk_stops_at_the_first_limit_crossed, make_root, remove_root),
	};
	return cmocka_run_group_tests_name("files", tests, NULL, NULL);
}
