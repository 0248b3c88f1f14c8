/* test_channel.c — the worker channel decoder against split frames, caps
 * and every kind of malformed input a hostile workload can send. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "channel.h"

#include <stdlib.h>
#include <string.h>

struct seen {
	int count;
	char types[16][16];
};

static int collect(json_t *m, const char *type, void *arg)
{
	(void)m;
	struct seen *s = arg;
	if (s->count < 16)
		snprintf(s->types[s->count], sizeof(s->types[0]), "%s", type);
	s->count++;
	return 0;
}

/* Frames for raw payload bytes. */
static size_t frame_raw(unsigned char *out, const char *payload, size_t n)
{
	out[0] = (unsigned char)(n >> 24);
	out[1] = (unsigned char)(n >> 16);
	out[2] = (unsigned char)(n >> 8);
	out[3] = (unsigned char)n;
	memcpy(out + 4, payload, n);
	return n + 4;
}

static size_t stream_of(unsigned char *out, const char *const *msgs, size_t count)
{
	size_t len = 0;
	for (size_t i = 0; i < count; i++)
		len += frame_raw(out + len, msgs[i], strlen(msgs[i]));
	return len;
}

static const char *const good[] = {
	"{\"type\":\"state\",\"state\":\"running\"}",
	"{\"type\":\"progress\",\"progress\":0.5,\"message\":\"half\"}",
	"{\"type\":\"metric\",\"name\":\"loss\",\"value\":1.25,\"step\":3}",
	"{\"type\":\"tags\",\"tags\":{\"model\":\"x\"}}",
	"{\"type\":\"result\",\"summary\":{\"ok\":true}}",
};

static void whole_stream_decodes(void **state)
{
	(void)state;
	unsigned char buf[1024];
	size_t n = stream_of(buf, good, 5);
	struct sbx_channel c;
	struct seen s = { 0 };
	sbx_channel_init(&c, 0);
	assert_int_equal(sbx_channel_feed(&c, buf, n, collect, &s), 0);
	assert_int_equal(s.count, 5);
	assert_string_equal(s.types[4], "result");
	assert_true(c.terminal_seen);
	sbx_channel_free(&c);
}

static void split_at_every_byte(void **state)
{
	(void)state;
	unsigned char buf[1024];
	size_t n = stream_of(buf, good, 5);
	for (size_t cut = 0; cut <= n; cut++) {
		struct sbx_channel c;
		struct seen s = { 0 };
		sbx_channel_init(&c, 0);
		assert_int_equal(sbx_channel_feed(&c, buf, cut, collect, &s), 0);
		assert_int_equal(sbx_channel_feed(&c, buf + cut, n - cut, collect, &s), 0);
		assert_int_equal(s.count, 5);
		sbx_channel_free(&c);
	}
}

static void one_byte_reads(void **state)
{
	(void)state;
	unsigned char buf[1024];
	size_t n = stream_of(buf, good, 5);
	struct sbx_channel c;
	struct seen s = { 0 };
	sbx_channel_init(&c, 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(sbx_channel_feed(&c, buf + i, 1, collect, &s), 0);
	assert_int_equal(s.count, 5);
	sbx_channel_free(&c);
}

/* A diagnostic message padded to exactly `total` bytes. */
static char *padded(size_t total)
{
	const char *head = "{\"type\":\"diagnostic\",\"message\":\"";
	char *m = malloc(total + 1);
	size_t h = strlen(head);
	memcpy(m, head, h);
	memset(m + h, 'x', total - h - 2);
	memcpy(m + total - 2, "\"}", 3);
	return m;
}

static void exact_maximum_and_one_more(void **state)
{
	(void)state;
	const size_t max = 4096;
	unsigned char *buf = malloc(max + 16);
	for (size_t size = max - 1; size <= max + 1; size++) {
		char *m = padded(size);
		size_t n = frame_raw(buf, m, size);
		struct sbx_channel c;
		struct seen s = { 0 };
		sbx_channel_init(&c, max);
		int rc = sbx_channel_feed(&c, buf, n, collect, &s);
		if (size <= max) {
			assert_int_equal(rc, 0);
			assert_int_equal(s.count, 1);
		} else {
			assert_int_equal(rc, -1);
			assert_non_null(strstr(c.violation, "over the 4096 byte maximum"));
		}
		sbx_channel_free(&c);
		free(m);
	}
	free(buf);
}

static void huge_length_is_refused_before_any_allocation(void **state)
{
	(void)state;
	unsigned char hdr[4] = { 0x80, 0, 0, 0 }; /* 2 GiB */
	struct sbx_channel c;
	sbx_channel_init(&c, 0);
	assert_int_equal(sbx_channel_feed(&c, hdr, 4, collect, NULL), -1);
	assert_null(c.frame);
	assert_non_null(strstr(c.violation, "2147483648"));
	/* A violated channel stays violated. */
	assert_int_equal(sbx_channel_feed(&c, "x", 1, collect, NULL), -1);
	sbx_channel_free(&c);
}

static void expect_violation(const char *payload, size_t len, const char *why)
{
	unsigned char buf[4096];
	size_t n = frame_raw(buf, payload, len);
	struct sbx_channel c;
	struct seen s = { 0 };
	sbx_channel_init(&c, 0);
	assert_int_equal(sbx_channel_feed(&c, buf, n, collect, &s), -1);
	assert_int_equal(s.count, 0);
	if (!strstr(c.violation, why))
		fail_msg("violation '%s' does not say '%s'", c.violation, why);
	sbx_channel_free(&c);
}

static void malformed_frames_are_violations(void **state)
{
	(void)state;
	expect_violation("{\"type\":\"state\",\"state\":\"\xff\"}", strlen("{\"type\":\"state\",\"state\":\"\xff\"}"), "not valid UTF-8");
	expect_violation("{\"type\":\"state\",\"state\":\"\xed\xa0\x80\"}", strlen("{\"type\":\"state\",\"state\":\"\xed\xa0\x80\"}"), "not valid UTF-8");
	expect_violation("{\"type\":\"state\"", strlen("{\"type\":\"state\""), "not valid JSON");
	expect_violation("[1,2]", strlen("[1,2]"), "not a JSON object");
	expect_violation("{\"state\":\"x\"}", strlen("{\"state\":\"x\"}"), "without a string \"type\"");
	expect_violation("{\"type\":\"launch_missiles\"}", strlen("{\"type\":\"launch_missiles\"}"), "unknown message type");
	expect_violation("{\"type\":\"state\",\"state\":\"x\",\"extra\":1}", strlen("{\"type\":\"state\",\"state\":\"x\",\"extra\":1}"), "unknown field");
	expect_violation("{\"type\":\"metric\",\"name\":\"a\",\"value\":\"1\"}", strlen("{\"type\":\"metric\",\"name\":\"a\",\"value\":\"1\"}"), "must be a number");
	expect_violation("{\"type\":\"progress\",\"progress\":1.5}", strlen("{\"type\":\"progress\",\"progress\":1.5}"), "from 0 to 1");
	expect_violation("{\"type\":\"media\",\"path\":\"../../etc/shadow\"}", strlen("{\"type\":\"media\",\"path\":\"../../etc/shadow\"}"), "relative path inside");
	expect_violation("{\"type\":\"user_log\",\"level\":\"fatal\",\"message\":\"m\"}", strlen("{\"type\":\"user_log\",\"level\":\"fatal\",\"message\":\"m\"}"), "user_log.level");
	expect_violation("{\"type\":\"state\",\"state\":\"a\",\"state\":\"b\"}", strlen("{\"type\":\"state\",\"state\":\"a\",\"state\":\"b\"}"), "not valid JSON");
	expect_violation("", strlen(""), "an empty frame");
}

static void nothing_after_the_terminal_message(void **state)
{
	(void)state;
	const char *msgs[] = { "{\"type\":\"error\",\"message\":\"boom\"}", "{\"type\":\"state\",\"state\":\"x\"}" };
	unsigned char buf[256];
	size_t n = stream_of(buf, msgs, 2);
	struct sbx_channel c;
	struct seen s = { 0 };
	sbx_channel_init(&c, 0);
	assert_int_equal(sbx_channel_feed(&c, buf, n, collect, &s), -1);
	assert_int_equal(s.count, 1);
	assert_non_null(strstr(c.violation, "after the terminal"));
	sbx_channel_free(&c);
}

static void violation_text_is_bounded(void **state)
{
	(void)state;
	char payload[3000];
	int n = snprintf(payload, sizeof(payload), "{\"type\":\"%02000d\"}", 7);
	expect_violation(payload, (size_t)n, "unknown message type");
	struct sbx_channel c;
	unsigned char buf[4096];
	size_t len = frame_raw(buf, payload, (size_t)n);
	sbx_channel_init(&c, 0);
	sbx_channel_feed(&c, buf, len, collect, NULL);
	assert_true(strlen(c.violation) < 120);
	sbx_channel_free(&c);
}

static void encode_round_trips(void **state)
{
	(void)state;
	json_t *m = json_pack("{s:s,s:f}", "type", "progress", "progress", 0.25);
	size_t len;
	char *frame = sbx_channel_encode(m, &len);
	struct sbx_channel c;
	struct seen s = { 0 };
	sbx_channel_init(&c, 0);
	assert_int_equal(sbx_channel_feed(&c, frame, len, collect, &s), 0);
	assert_int_equal(s.count, 1);
	free(frame);
	json_decref(m);
	sbx_channel_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(whole_stream_decodes),
		cmocka_unit_test(split_at_every_byte),
		cmocka_unit_test(one_byte_reads),
		cmocka_unit_test(exact_maximum_and_one_more),
		cmocka_unit_test(huge_length_is_refused_before_any_allocation),
		cmocka_unit_test(malformed_frames_are_violations),
		cmocka_unit_test(nothing_after_the_terminal_message),
		cmocka_unit_test(violation_text_is_bounded),
		cmocka_unit_test(encode_round_trips),
	};
	return cmocka_run_group_tests_name("channel", tests, NULL, NULL);
}
