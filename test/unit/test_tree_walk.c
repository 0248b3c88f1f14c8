/* test_tree_walk.c — the walk itself: symlinks never entered, the depth
 * bound reported, mount points skipped, the name cap, paths on demand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tree_walk.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tmpdir.h"

/* What a walk saw, one line per callback: "e path", "d path" (entered
 * directories' entries), "l path" (left), "x path" (too deep). */
struct seen {
	char log[8192];
	size_t n;
};

static void note(struct sbx_walk *w, const struct sbx_walk_entry *x, char what)
{
	struct seen *s = w->ctx;
	char path[PATH_MAX];
	assert_true(sbx_walk_path(w, x, path, sizeof(path)) >= 0);
	s->n += (size_t)snprintf(s->log + s->n, sizeof(s->log) - s->n, "%c %s\n", what, path);
}

static int on_entry(struct sbx_walk *w, const struct sbx_walk_entry *x)
{
	/* A directory comes with its fd, anything else with none. */
	assert_int_equal(x->fd >= 0, S_ISDIR(x->st->st_mode));
	note(w, x, x->fd >= 0 ? 'd' : 'e');
	return SBX_WALK_GO;
}

static int on_leave(struct sbx_walk *w, const struct sbx_walk_entry *x)
{
	note(w, x, 'l');
	return SBX_WALK_GO;
}

static int on_too_deep(struct sbx_walk *w, const struct sbx_walk_entry *x)
{
	assert_int_equal(x->fd, -1);
	note(w, x, 'x');
	return SBX_WALK_GO;
}

static void mk(const char *rel, bool directory)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	if (directory) {
		assert_int_equal(mkdir(p, 0755), 0);
	} else {
		int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		assert_true(fd >= 0);
		close(fd);
	}
}

static int walk(struct sbx_walk *w, struct seen *s)
{
	memset(s, 0, sizeof(*s));
	w->ctx = s;
	w->entry = on_entry;
	w->leave = on_leave;
	w->too_deep = on_too_deep;
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	int rc = sbx_walk_run(w, fd);
	close(fd);
	return rc;
}

static void symlinks_are_entries_never_entered(void **state)
{
	(void)state;
	char p[PATH_MAX];
	struct sbx_walk w = { .max_depth = 10 };
	struct seen s;
	mk("d", true);
	mk("d/f", false);
	snprintf(p, sizeof(p), "%s/d", dir);
	assert_int_equal(symlink(p, (snprintf(p, sizeof(p), "%s/l", dir), p)), 0);
	assert_int_equal(walk(&w, &s), 0);
	assert_non_null(strstr(s.log, "e l\n"));
	assert_non_null(strstr(s.log, "d d\ne d/f\nl d\n"));
	assert_null(strstr(s.log, "l/f"));
	assert_int_equal(w.names, 3);
}

static void the_depth_bound_is_reported_not_crossed(void **state)
{
	(void)state;
	struct sbx_walk w = { .max_depth = 2 };
	struct seen s;
	mk("a", true);
	mk("a/b", true);
	mk("a/b/c", true);
	mk("a/b/c/d", true);
	assert_int_equal(walk(&w, &s), 0);
	assert_string_equal(s.log, "d a\nd a/b\nd a/b/c\nx a/b/c\nl a/b\nl a\n");
}

static void the_name_cap_ends_the_walk(void **state)
{
	(void)state;
	char name[16];
	struct sbx_walk w = { .max_depth = 10, .max_names = 3 };
	struct seen s;
	for (int i = 0; i < 10; i++)
		mk((snprintf(name, sizeof(name), "f%d", i), name), false);
	assert_int_equal(walk(&w, &s), 1);
	assert_true(w.capped);
	assert_int_equal(w.names, 4);
	size_t lines = 0;
	for (const char *c = s.log; *c; c++)
		lines += *c == '\n';
	assert_int_equal(lines, 3);
}

/* In a mount namespace of its own (root only; skipped elsewhere): a
 * tmpfs mounted inside the tree is neither listed nor entered. */
static void mount_points_are_skipped(void **state)
{
	(void)state;
	mk("m", true);
	mk("keep", false);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/m", dir);
		if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0 ||
		    mount("tmpfs", p, "tmpfs", 0, "size=64k") != 0)
			_exit(77);
		strcat(p, "/inside");
		close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
		struct sbx_walk w = { .max_depth = 10 };
		struct seen s;
		walk(&w, &s);
		_exit(strcmp(s.log, "e keep\n") == 0 && w.names == 2 ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* The same for a bind mount of a directory of the same filesystem (its
 * st_dev is the tree's): a host directory bound in is never walked. */
static void bind_mounts_are_skipped(void **state)
{
	(void)state;
	mk("b", true);
	mk("keep", false);
	char host[PATH_MAX];
	snprintf(host, sizeof(host), "%s-host", dir);
	assert_int_equal(mkdir(host, 0700), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char p[PATH_MAX], f[PATH_MAX + 16];
		snprintf(p, sizeof(p), "%s/b", dir);
		snprintf(f, sizeof(f), "%s/secret", host);
		close(open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
		if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0 ||
		    mount(host, p, "none", MS_BIND, NULL) != 0)
			_exit(77);
		struct sbx_walk w = { .max_depth = 10 };
		struct seen s;
		walk(&w, &s);
		_exit(strcmp(s.log, "e keep\n") == 0 ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	char f[PATH_MAX + 16];
	snprintf(f, sizeof(f), "%s/secret", host);
	unlink(f);
	rmdir(host);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

static int stop_at_b(struct sbx_walk *w, const struct sbx_walk_entry *x)
{
	note(w, x, 'e');
	return strcmp(x->name, "b") == 0 ? SBX_WALK_STOP : strcmp(x->name, "s") == 0 ? SBX_WALK_SKIP : SBX_WALK_GO;
}

static int listing_failed(struct sbx_walk *w, const struct sbx_walk_entry *x, enum sbx_walk_op op, int err)
{
	(void)w;
	(void)x;
	(void)op;
	(void)err;
	fail_msg("no error expected");
	return SBX_WALK_STOP;
}

static void skip_and_stop(void **state)
{
	(void)state;
	struct sbx_walk w = { .max_depth = 10, .error = listing_failed };
	struct seen s;
	mk("s", true);
	mk("s/inner", false);
	assert_int_equal(walk(&w, &s), 0);
	w.entry = stop_at_b;
	memset(&s, 0, sizeof(s));
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(sbx_walk_run(&w, fd), 0);
	assert_string_equal(s.log, "e s\n"); /* skipped: s/inner unseen, s not left */
	mk("b", true);
	memset(&s, 0, sizeof(s));
	assert_int_equal(sbx_walk_run(&w, fd), 1);
	assert_non_null(strstr(s.log, "e b\n"));
	close(fd);
	/* Not a directory: no walk. */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_int_equal(sbx_walk_run(&w, fd), -1);
	assert_int_equal(errno, ENOTDIR);
	close(fd);
}

static void paths_are_built_only_as_asked_and_bounded(void **state)
{
	(void)state;
	struct sbx_walk w = { 0 };
	struct sbx_walk_level levels[] = { { 0 }, { .name = "ab" }, { .name = "cd" } };
	w.levels = levels;
	struct sbx_walk_entry x = { .name = "ef", .depth = 3 };
	char buf[16];
	assert_int_equal(sbx_walk_path(&w, &x, buf, sizeof(buf)), 8);
	assert_string_equal(buf, "ab/cd/ef");
	assert_int_equal(sbx_walk_path(&w, &x, buf, 6), -1);
	assert_int_equal(errno, ENAMETOOLONG);
	assert_string_equal(buf, "ab/cd");
	x.depth = 0;
	assert_int_equal(sbx_walk_path(&w, &x, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(symlinks_are_entries_never_entered, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(the_depth_bound_is_reported_not_crossed, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(the_name_cap_ends_the_walk, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(mount_points_are_skipped, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(bind_mounts_are_skipped, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(skip_and_stop, make_dir, remove_dir),
		cmocka_unit_test(paths_are_built_only_as_asked_and_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
