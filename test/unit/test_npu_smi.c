/* test_npu_smi.c — the npu-smi tables of a 910B3 host (two cards, a
 * process table after them) and a dual-die 910C host (Mcu rows, NA and -
 * readings), with and without `info -m`, and junk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "io.h"
#include "../../src/sbx-npu/smi.h"

#include <stdlib.h>
#include <string.h>

static char *fixture(const char *name)
{
	char path[512];
	struct sbx_error e;
	size_t len;
	snprintf(path, sizeof(path), "%s/%s", getenv("SBX_NPU_FIXTURES") ? getenv("SBX_NPU_FIXTURES")
									   : "test/fixtures/npu-smi", name);
	char *text = sbx_read_file_capped(path, 1u << 20, &len, &e);
	if (!text)
		fail_msg("%s: %s", path, e.message);
	return text;
}

static char *dump(json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(v);
	return s;
}

static void check(json_t *devices, size_t i, const char *want)
{
	char *got = json_dumps(json_array_get(devices, i), JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(6));
	if (strcmp(got, want) != 0)
		fail_msg("device %zu:\n got  %s\n want %s", i, got, want);
	free(got);
}

static void b3_with_logic_ids(void **state)
{
	(void)state;
	char *info = fixture("info-910b3.txt"), *map = fixture("map-910b3.txt");
	json_t *d = sbx_npu_smi_parse(info, map);
	assert_int_equal(json_array_size(d), 2); /* the process table is not devices */
	check(d, 0, "{\"aiCorePercent\":0,\"busId\":\"0000:81:00.0\",\"cardId\":4,\"chipId\":0,\"chipName\":\"910B3\","
		    "\"hbmTotalMB\":65536,\"hbmUsedMB\":3161,\"health\":\"OK\",\"hostIndex\":4,\"powerW\":93.6,\"temperatureC\":40}");
	check(d, 1, "{\"aiCorePercent\":12,\"busId\":\"0000:C1:00.0\",\"cardId\":6,\"chipId\":0,\"chipName\":\"910B3\","
		    "\"hbmTotalMB\":65536,\"hbmUsedMB\":40321,\"health\":\"Warning\",\"hostIndex\":6,\"powerW\":101.2,"
		    "\"temperatureC\":43}");
	json_decref(d);
	free(info);
	free(map);
}

static void dual_die_910c(void **state)
{
	(void)state;
	char *info = fixture("info-910c.txt"), *map = fixture("map-910c.txt");
	json_t *d = sbx_npu_smi_parse(info, map);
	assert_int_equal(json_array_size(d), 4);
	/* Identity is the logic id: card 1's chips are 2 and 3, never 1. */
	int want[4][3] = { { 0, 0, 0 }, { 0, 1, 1 }, { 1, 0, 2 }, { 1, 1, 3 } };
	for (size_t i = 0; i < 4; i++) {
		json_t *x = json_array_get(d, i);
		assert_int_equal(json_integer_value(json_object_get(x, "cardId")), want[i][0]);
		assert_int_equal(json_integer_value(json_object_get(x, "chipId")), want[i][1]);
		assert_int_equal(json_integer_value(json_object_get(x, "hostIndex")), want[i][2]);
		assert_string_equal(json_string_value(json_object_get(x, "chipName")), "910C");
	}
	assert_true(json_is_null(json_object_get(json_array_get(d, 2), "powerW")));       /* NA */
	assert_true(json_is_null(json_object_get(json_array_get(d, 3), "aiCorePercent"))); /* - */
	json_decref(d);
	/* Without the mapping the readings stand alone: hostIndex is the card. */
	d = sbx_npu_smi_parse(info, NULL);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(d, 3), "hostIndex")), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(d, 3), "chipName")), "Ascend910");
	json_decref(d);
	free(info);
	free(map);
}

static void junk_and_noise(void **state)
{
	(void)state;
	static const char *const texts[] = {
		"",
		"DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\ndcmi module initialize failed. ret is -8005\n",
		"| only | two |\n| 0 | 0000:00:00.0 | x |\n",               /* a chip row with no card first */
		"| 12 34 | OK | 1 2 |\n| 0 | b | 1 2 / 3 4 / 5 |\n",       /* a head row with no letters */
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		char *s = dump(sbx_npu_smi_parse(texts[i], texts[i]));
		assert_string_equal(s, "[]");
		free(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(b3_with_logic_ids),
		cmocka_unit_test(dual_die_910c),
		cmocka_unit_test(junk_and_noise),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
