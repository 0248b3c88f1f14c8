/* test_secret_store.c — the secret store's contract as sbx-egress uses it:
 * fields checked by name, a save and load round trip (the file 0600, the
 * value back whole, cleansed on free), host matching, and unknown names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "secret_store.h"
#include "tmpdir.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static json_t *spec(const char *extra)
{
	char text[1024];
	snprintf(text, sizeof(text),
		 "{\"name\":\"hf\",\"value\":\"tok-12345\",\"hosts\":[\"huggingface.co\",\"*.hf.co:443\"],"
		 "\"env\":\"HF_TOKEN\"%s}", extra);
	json_t *doc = json_loads(text, JSON_ALLOW_NUL, NULL);
	assert_non_null(doc);
	return doc;
}

static void fields_are_checked_by_name(void **state)
{
	(void)state;
	static const struct { const char *extra; const char *field; } rows[] = {
		{ ",\"header\":\"Authorization: Bearer {}\"", NULL },
		{ ",\"basic\":{\"username\":\"bot\"}", NULL },
		{ "", "header" },                                        /* neither */
		{ ",\"header\":\"x: {}\",\"basic\":{\"username\":\"b\"}", "header" }, /* both */
		{ ",\"header\":\"host: {}\"", "header" },
		{ ",\"header\":\"x-key: {}{}\"", "header" },
		{ ",\"header\":\"x key: {}\"", "header" },
		{ ",\"basic\":{\"username\":\"a:b\"}", "basic.username" },
		{ ",\"header\":\"x: {}\",\"createdAt\":\"yesterday\"", "createdAt" },
		{ ",\"header\":\"x: {}\",\"other\":1", "other" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sbx_secret s;
		struct sbx_error e;
		json_t *doc = spec(rows[i].extra);
		int rc = sbx_secret_from_json(doc, &s, &e);
		json_decref(doc);
		if (!rows[i].field) {
			assert_int_equal(rc, 0);
			assert_int_equal(s.value_len, 9);
			assert_string_equal(s.value, "tok-12345");
			sbx_secret_free(&s);
			assert_null(s.value);
		} else {
			assert_int_equal(rc, -1);
			assert_non_null(strstr(e.message, rows[i].field));
			assert_null(s.value);
		}
	}
	struct sbx_secret s;
	struct sbx_error e;
	const char *bad_values[] = { "a\rb", "a\nb", "", "a\tb" };
	for (size_t i = 0; i < 4; i++) {
		memset(&s, 0, sizeof(s));
		assert_int_equal(sbx_secret_set_value(&s, bad_values[i], strlen(bad_values[i]), &e), -1);
		assert_non_null(strstr(e.message, "value"));
	}
	assert_int_equal(sbx_secret_set_value(&s, "a\0b", 3, &e), -1);
}

static void round_trip_and_matching(void **state)
{
	(void)state;
	char store[300];
	struct sbx_secret s, back;
	struct sbx_error e;
	struct stat st;
	snprintf(store, sizeof(store), "%s/secrets", dir);
	assert_int_equal(sbx_secret_store_open(store, false, &e), SBX_SECRET_NO_STORE);
	int fd = sbx_secret_store_open(store, true, &e);
	assert_true(fd >= 0);
	json_t *doc = spec(",\"header\":\"X-Api-Key: {}\"");
	assert_int_equal(sbx_secret_from_json(doc, &s, &e), 0);
	json_decref(doc);
	assert_int_equal(sbx_secret_save(fd, &s, &e), 0);
	assert_int_equal(fstatat(fd, "hf.json", &st, 0), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(sbx_secret_load(fd, "hf", true, &back, &e), 0);
	assert_string_equal(back.value, "tok-12345");
	assert_string_equal(back.header_name, "x-api-key");
	assert_string_equal(back.header_format, "{}");
	assert_true(sbx_secret_host_matches(&back, "huggingface.co", 443));
	assert_true(sbx_secret_host_matches(&back, "huggingface.co", 8080));
	assert_true(sbx_secret_host_matches(&back, "cdn.hf.co", 443));
	assert_false(sbx_secret_host_matches(&back, "cdn.hf.co", 80));   /* pinned to 443 */
	assert_false(sbx_secret_host_matches(&back, "hf.co", 443));      /* *. is below, never itself */
	assert_false(sbx_secret_host_matches(&back, "evilhuggingface.co", 443));
	json_t *meta = sbx_secret_meta(&back);
	assert_null(json_object_get(meta, "value"));
	json_decref(meta);
	sbx_secret_free(&back);
	assert_int_equal(sbx_secret_load(fd, "hf", false, &back, &e), 0);
	assert_null(back.value);
	assert_int_equal(sbx_secret_load(fd, "gh", true, &back, &e), SBX_SECRET_UNKNOWN);
	assert_string_equal(e.code, "unknown-secret");
	char **names;
	assert_int_equal(sbx_secret_list(fd, &names, &e), 1);
	assert_string_equal(names[0], "hf");
	sbx_secret_names_free(names, 1);
	assert_int_equal(sbx_secret_remove(fd, "hf", &e), 0);
	assert_int_equal(sbx_secret_remove(fd, "hf", &e), SBX_SECRET_UNKNOWN);
	sbx_secret_free(&s);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fields_are_checked_by_name),
		cmocka_unit_test_setup_teardown(round_trip_and_matching, make_dir, remove_dir),
	};
	return cmocka_run_group_tests_name("secret_store", tests, NULL, NULL);
}
