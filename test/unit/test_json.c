/* test_json.c — strict JSON: duplicate keys, schema errors naming the field,
 * caps on input, and lossy strings for foreign text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "exitcodes.h"
#include "json.h"
#include "../../src/sbx-httpd/json_escape.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct sbx_json_field fields[] = {
	{ "argv", SBX_JSON_ARRAY, true, false },
	{ "cwd", SBX_JSON_STRING, false, true },
	{ "timeoutMs", SBX_JSON_INTEGER, false, false },
};

static json_t *parse(const char *text, struct sbx_error *e)
{
	return sbx_json_parse(text, strlen(text), "spec.json", e);
}

static void duplicate_keys_are_refused_with_position(void **state)
{
	(void)state;
	struct sbx_error e;
	json_t *v = parse("{\"a\":1,\n \"a\":2}", &e);
	assert_null(v);
	assert_int_equal(e.exit_code, SBX_EXIT_USAGE);
	assert_string_equal(e.code, "bad-json");
	assert_non_null(strstr(e.message, "spec.json:2:"));
	assert_non_null(strstr(e.message, "duplicate object key"));
}

static void valid_document_passes_schema(void **state)
{
	(void)state;
	struct sbx_error e;
	json_t *v = parse("{\"argv\":[\"true\"],\"cwd\":null,\"timeoutMs\":5}", &e);
	assert_non_null(v);
	assert_int_equal(sbx_json_validate(v, fields, 3, "", &e), 0);
	json_decref(v);
}

static void unknown_field_is_named(void **state)
{
	(void)state;
	struct sbx_error e;
	json_t *v = parse("{\"argv\":[],\"cwdd\":\"/\"}", &e);
	assert_int_equal(sbx_json_validate(v, fields, 3, "spec", &e), -1);
	assert_string_equal(e.code, "unknown-field");
	assert_string_equal(e.message, "spec.cwdd: unknown field");
	json_decref(v);
}

static void missing_required_field_is_named(void **state)
{
	(void)state;
	struct sbx_error e;
	json_t *v = parse("{\"cwd\":\"/\"}", &e);
	assert_int_equal(sbx_json_validate(v, fields, 3, "", &e), -1);
	assert_string_equal(e.message, "argv: required field is missing");
	json_decref(v);
}

static void wrong_kind_is_named(void **state)
{
	(void)state;
	struct sbx_error e;
	json_t *v = parse("{\"argv\":[],\"timeoutMs\":1.5}", &e);
	assert_int_equal(sbx_json_validate(v, fields, 3, "", &e), -1);
	assert_string_equal(e.message, "timeoutMs: must be an integer");
	json_decref(v);
	v = parse("{\"argv\":[],\"timeoutMs\":null}", &e);
	assert_int_equal(sbx_json_validate(v, fields, 3, "", &e), -1);
	json_decref(v);
}

static void non_object_is_refused(void **state)
{
	(void)state;
	struct sbx_error e;
	json_t *v = parse("[1]", &e);
	assert_int_equal(sbx_json_validate(v, fields, 3, "", &e), -1);
	assert_string_equal(e.message, "the document must be an object");
	json_decref(v);
}

static void load_refuses_input_over_the_cap(void **state)
{
	(void)state;
	char path[] = "/tmp/sbx-json-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"argv\":[\"x\"]}", 14), 14);
	close(fd);

	struct sbx_error e;
	json_t *v = sbx_json_load(path, 10, &e);
	assert_null(v);
	assert_string_equal(e.code, "input-too-large");
	v = sbx_json_load(path, 14, &e);
	assert_non_null(v);
	json_decref(v);
	unlink(path);
	assert_null(sbx_json_load(path, 100, &e));
	assert_string_equal(e.code, "open-failed");
}

static void lossy_string_replaces_invalid_utf8(void **state)
{
	(void)state;
	json_t *v = sbx_json_string_lossy("ok \xff\xfe caf\xc3\xa9 \xed\xa0\x80");
	assert_string_equal(json_string_value(v),
			    "ok \xef\xbf\xbd\xef\xbf\xbd caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	json_decref(v);
}

/* Found by fuzz_npu_smi: a reading beyond long long was cast (UB). */
static void readings_are_numbers_or_null(void **state)
{
	(void)state;
	json_t *v = sbx_json_reading("9999999999999999999");
	assert_true(json_is_real(v));
	json_decref(v);
	v = sbx_json_reading(" 42 ");
	assert_int_equal(json_integer_value(v), 42);
	json_decref(v);
	v = sbx_json_reading("61.50");
	assert_true(json_is_real(v) && json_real_value(v) == 61.5);
	json_decref(v);
	const char *nulls[] = { "-", "NA", "[N/A]", "", "1e999", "nan", "3 W" };
	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++) {
		v = sbx_json_reading(nulls[i]);
		assert_true(json_is_null(v));
		json_decref(v);
	}
}

/* The escaper fed in pieces of every size writes what jansson writes for
 * the same bytes made lossy whole: split characters, invalid bytes, NUL. */
static void escaper_in_pieces_matches_the_whole_string(void **state)
{
	(void)state;
	static const unsigned char sample[] = "a\"b\\c\n\t\x01\x00\x7f \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 "
					      "\xff \xc3 \xe2\x82 \xf0\x9f\x98 \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80 end\xe2\x82";
	size_t n = sizeof(sample) - 1;
	json_t *whole = sbx_json_stringn_lossy((const char *)sample, n);
	char *want = json_dumps(whole, JSON_ENCODE_ANY);
	json_decref(whole);
	size_t want_len = strlen(want) - 2; /* without the quotes */
	for (size_t piece = 1; piece <= n; piece++) {
		struct sbx_json_escaper x = { 0 };
		char out[SBX_JSON_ESCAPE_BOUND(sizeof(sample)) * 2];
		size_t len = 0;
		for (size_t at = 0; at < n; at += piece) {
			size_t k = n - at < piece ? n - at : piece;
			len += sbx_json_escape(&x, sample + at, k, false, out + len);
		}
		len += sbx_json_escape(&x, "", 0, true, out + len);
		assert_int_equal(len, want_len);
		assert_memory_equal(out, want + 1, want_len);
	}
	free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(readings_are_numbers_or_null),
		cmocka_unit_test(duplicate_keys_are_refused_with_position),
		cmocka_unit_test(valid_document_passes_schema),
		cmocka_unit_test(unknown_field_is_named),
		cmocka_unit_test(missing_required_field_is_named),
		cmocka_unit_test(wrong_kind_is_named),
		cmocka_unit_test(non_object_is_refused),
		cmocka_unit_test(load_refuses_input_over_the_cap),
		cmocka_unit_test(lossy_string_replaces_invalid_utf8),
		cmocka_unit_test(escaper_in_pieces_matches_the_whole_string),
	};
	return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
