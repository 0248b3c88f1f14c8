/* test_output.c — the output budget: whole when under it, head + marker +
 * tail past it, the tails sharing what the heads left, total within the
 * budget, and no cut through a UTF-8 character. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../src/sbx-run/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tmpdir.h"

static char *slurp(int stream, size_t *len)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s.txt", dir, stream ? "stderr" : "stdout");
	FILE *f = fopen(path, "rb");
	char *buf = calloc(1, 1 << 20);
	*len = f ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	if (f)
		fclose(f);
	return buf;
}

static void feed(struct sbx_output *o, int stream, const char *unit, size_t count, size_t chunk)
{
	struct sbx_error e;
	size_t ulen = strlen(unit);
	char *buf = malloc(chunk * ulen);
	for (size_t i = 0; i < chunk; i++)
		memcpy(buf + i * ulen, unit, ulen);
	for (size_t done = 0; done < count; done += chunk) {
		size_t n = count - done < chunk ? count - done : chunk;
		assert_int_equal(sbx_output_add(o, stream, buf, n * ulen, &e), 0);
	}
	free(buf);
}

static bool valid_utf8(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len;) {
		size_t n = p[i] < 0x80 ? 1 : (p[i] & 0xE0) == 0xC0 ? 2 : (p[i] & 0xF0) == 0xE0 ? 3 : (p[i] & 0xF8) == 0xF0 ? 4 : 0;
		if (n == 0 || i + n > len)
			return false;
		for (size_t k = 1; k < n; k++)
			if ((p[i + k] & 0xC0) != 0x80)
				return false;
		i += n;
	}
	return true;
}

static void under_budget_is_whole(void **state)
{
	(void)state;
	struct sbx_output o;
	struct sbx_error e;
	bool truncated;
	size_t len;
	assert_int_equal(sbx_output_open(&o, dir, 4096, &e), 0);
	feed(&o, 0, "0123456789", 300, 7); /* 3000 bytes: past the head half, under the budget */
	feed(&o, 1, "e", 100, 10);
	assert_int_equal(sbx_output_finish(&o, &truncated, &e), 0);
	sbx_output_close(&o);
	assert_false(truncated);
	char *out = slurp(0, &len);
	assert_int_equal(len, 3000);
	assert_memory_equal(out + 2990, "0123456789", 10);
	free(out);
	out = slurp(1, &len);
	assert_int_equal(len, 100);
	free(out);
}

static void past_budget_keeps_head_marker_tail(void **state)
{
	(void)state;
	struct sbx_output o;
	struct sbx_error e;
	bool truncated;
	size_t len;
	char marker[160];
	assert_int_equal(sbx_output_open(&o, dir, 4096, &e), 0);
	feed(&o, 0, "h", 2048, 100);          /* the head half */
	feed(&o, 0, "x", 100000, 1000);       /* dropped, but for ... */
	feed(&o, 0, "t", 2048, 100);          /* ... the tail */
	assert_int_equal(sbx_output_finish(&o, &truncated, &e), 0);
	sbx_output_close(&o);
	assert_true(truncated);
	char *out = slurp(0, &len);
	sbx_output_marker(4096, marker, sizeof(marker));
	/* Head, marker and tail: the marker counts against the budget. */
	assert_int_equal(len, 4096);
	assert_int_equal(out[2047], 'h');
	assert_memory_equal(out + 2048, marker, strlen(marker));
	assert_int_equal(out[len - 1], 't');
	assert_int_equal(out[2048 + strlen(marker)], 't');
	free(out);
	/* The ring file is gone. */
	char ring[128];
	snprintf(ring, sizeof(ring), "%s/.stdout.tail", dir);
	assert_int_equal(access(ring, F_OK), -1);
}

static void two_streams_share_the_budget(void **state)
{
	(void)state;
	struct sbx_output o;
	struct sbx_error e;
	bool truncated;
	size_t a, b;
	assert_int_equal(sbx_output_open(&o, dir, 8192, &e), 0);
	feed(&o, 0, "o", 50000, 999);
	feed(&o, 1, "e", 50000, 777);
	assert_int_equal(sbx_output_finish(&o, &truncated, &e), 0);
	sbx_output_close(&o);
	assert_true(truncated);
	free(slurp(0, &a));
	free(slurp(1, &b));
	char marker[160];
	sbx_output_marker(8192, marker, sizeof(marker));
	assert_true(a + b <= 8192); /* both markers included */
	assert_true(b > strlen(marker)); /* stderr kept a tail too */
}

static void cuts_never_split_characters(void **state)
{
	(void)state;
	struct sbx_output o;
	struct sbx_error e;
	bool truncated;
	size_t len;
	/* 4-byte characters fed in 3-byte-misaligned chunks around both cuts. */
	assert_int_equal(sbx_output_open(&o, dir, 4099, &e), 0);
	const char *emoji = "\xf0\x9f\x98\x80";
	char buf[4 * 1000];
	for (int i = 0; i < 1000; i++)
		memcpy(buf + 4 * i, emoji, 4);
	for (int round = 0; round < 20; round++)
		for (size_t off = 0; off < sizeof(buf); off += 3)
			assert_int_equal(sbx_output_add(&o, 0, buf + off, off + 3 <= sizeof(buf) ? 3 : sizeof(buf) - off, &e), 0);
	assert_int_equal(sbx_output_finish(&o, &truncated, &e), 0);
	sbx_output_close(&o);
	assert_true(truncated);
	char *out = slurp(0, &len);
	assert_true(valid_utf8((unsigned char *)out, len));
	free(out);
}

static void zero_budget_never_truncates(void **state)
{
	(void)state;
	struct sbx_output o;
	struct sbx_error e;
	bool truncated;
	size_t len;
	assert_int_equal(sbx_output_open(&o, dir, 0, &e), 0);
	feed(&o, 0, "z", 200000, 4096);
	assert_int_equal(sbx_output_finish(&o, &truncated, &e), 0);
	sbx_output_close(&o);
	assert_false(truncated);
	free(slurp(0, &len));
	assert_int_equal(len, 200000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(under_budget_is_whole, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(past_budget_keeps_head_marker_tail, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(two_streams_share_the_budget, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(cuts_never_split_characters, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(zero_budget_never_truncates, make_dir, remove_dir),
	};
	return cmocka_run_group_tests_name("output", tests, NULL, NULL);
}
