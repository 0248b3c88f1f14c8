/* test_audit_follow.c — following the gateway's audit log as sbx-run does:
 * each whole line once, a torn one when it is whole, the unread rest of a
 * rotated generation from FILE.1 (whether the new file is shorter or has
 * grown past our offset), a lost generation counted, an overlong line
 * skipped, and the bytes per call bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../src/sbx-run/audit_follow.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tmpdir.h"

static char seen[64][32];
static int n_seen;

static bool take(void *arg, const char *text, size_t len)
{
	(void)arg;
	if (n_seen < 64)
		snprintf(seen[n_seen++], sizeof(seen[0]), "%.*s", (int)(len < 31 ? len : 31), text);
	return true;
}

static char log_path[128];

static void append(const char *text)
{
	int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* As the gateway rotates: FILE copied over FILE.1, then FILE emptied. */
static void rotate(void)
{
	char old[160], cmd[600];
	snprintf(old, sizeof(old), "%s.1", log_path);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && : > '%s'", log_path, old, log_path);
	assert_int_equal(system(cmd), 0);
}

static void read_all(struct audit_follow *f)
{
	n_seen = 0;
	while (audit_follow_read(f, AUDIT_FOLLOW_TICK_BYTES, 1000, take, NULL) > 0)
		;
}

static struct audit_follow *opened(const char *before)
{
	static struct audit_follow f;
	snprintf(log_path, sizeof(log_path), "%s/audit.log", dir);
	append(before);
	assert_int_equal(audit_follow_open(&f, log_path), 0);
	return &f;
}

static void from_the_end_each_line_once(void **state)
{
	(void)state;
	struct audit_follow *f = opened("{\"old\":1}\n");
	read_all(f);
	assert_int_equal(n_seen, 0);
	append("{\"a\":1}\n{\"b\":");
	read_all(f);
	assert_int_equal(n_seen, 1);
	assert_string_equal(seen[0], "{\"a\":1}");
	append("2}\n");
	read_all(f);
	assert_int_equal(n_seen, 1);
	assert_string_equal(seen[0], "{\"b\":2}");
	read_all(f);
	assert_int_equal(n_seen, 0);
	audit_follow_close(f);
}

static void a_rotation_is_read_through(void **state)
{
	(void)state;
	struct audit_follow *f = opened("{\"old\":1}\n");
	/* Shorter after: the unread lines are in FILE.1. */
	append("{\"a\":1}\n");
	rotate();
	append("{\"b\":1}\n");
	read_all(f);
	assert_int_equal(n_seen, 2);
	assert_string_equal(seen[0], "{\"a\":1}");
	assert_string_equal(seen[1], "{\"b\":1}");
	/* Grown past our offset since: the bytes before it changed. */
	append("{\"c\":1}\n");
	rotate();
	append("{\"d\":1,\"padding\":\"................................................................\"}\n");
	read_all(f);
	assert_int_equal(n_seen, 2);
	assert_string_equal(seen[0], "{\"c\":1}");
	assert_memory_equal(seen[1], "{\"d\":1,", 6);
	assert_int_equal(f->gaps, 0);
	/* Two rotations between reads: that generation is lost, and said. */
	append("{\"lost\":1}\n");
	rotate();
	append("{\"lost\":2,\"padding\":\"..................................................................\"}\n");
	rotate();
	append("{\"e\":1}\n");
	read_all(f);
	assert_int_equal(f->gaps, 1);
	assert_string_equal(seen[n_seen - 1], "{\"e\":1}");
	audit_follow_close(f);
}

static void overlong_lines_skipped_and_reads_bounded(void **state)
{
	(void)state;
	struct audit_follow *f = opened("");
	size_t big = 200 * 1024;
	char *line = malloc(big + 2);
	memset(line, 'x', big);
	line[big] = '\n';
	line[big + 1] = '\0';
	append(line);
	append("{\"after\":1}\n");
	n_seen = 0;
	size_t got = audit_follow_read(f, 100 * 1024, 1000, take, NULL);
	assert_true(got <= 100 * 1024);
	assert_int_equal(n_seen, 0);
	read_all(f);
	assert_int_equal(n_seen, 1);
	assert_string_equal(seen[0], "{\"after\":1}");
	/* Lines taken per call are bounded too. */
	for (int i = 0; i < 10; i++)
		append("{\"n\":1}\n");
	n_seen = 0;
	audit_follow_read(f, AUDIT_FOLLOW_TICK_BYTES, 3, take, NULL);
	assert_int_equal(n_seen, 3);
	read_all(f);
	assert_int_equal(n_seen, 7);
	free(line);
	audit_follow_close(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(from_the_end_each_line_once, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(a_rotation_is_read_through, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(overlong_lines_skipped_and_reads_bounded, make_dir, remove_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
