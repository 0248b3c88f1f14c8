/* test_json.c — strict JSON: duplicate keys, schema errors naming the field,
 * caps on input, and lossy strings for foreign text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "exitcodes.h"
#include "json.h"

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
	};
	return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
