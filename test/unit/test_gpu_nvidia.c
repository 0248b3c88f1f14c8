/* test_gpu_nvidia.c — NVIDIA GPUs from a proc tree (model, bus, device
 * minor; a directory without a minor ignored) joined with nvidia-smi CSV
 * rows on the bus id (8-hex and 4-hex domains, any case; [N/A] is null). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../src/sbx-npu/nvidia.h"
#include "tmpdir.h"

#include <string.h>
#include <sys/stat.h>

static void gpu(const char *bus, const char *body)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/gpus", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/gpus/%s", dir, bus);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/gpus/%s/information", dir, bus);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(body, f);
	fclose(f);
}

static char *row(json_t *devices, size_t i)
{
	return json_dumps(json_array_get(devices, i), JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(6));
}

static void joins_on_bus_id_sorted_by_minor(void **state)
{
	(void)state;
	gpu("0000:8a:00.0", "Model: \t\t NVIDIA H100\nBus Location: \t 0000:8A:00.0\nDevice Minor: \t 3\n");
	gpu("0000:07:00.0", "Model: \t\t NVIDIA A100\nIRQ: 34\nBus Location: \t 0000:07:00.0\nDevice Minor: \t 0\n");
	gpu("0000:09:00.0", "Model: \t\t broken\nBus Location: \t 0000:09:00.0\n");
	json_t *d = sbx_gpu_nvidia_parse(dir, "00000000:07:00.0, NVIDIA A100, 17, 1024, 81920, 61.50, 33\n"
					      "00000000:8a:00.0, NVIDIA H100, [N/A], 0, 81559, 70.12, 30\n"
					      "junk\n");
	assert_int_equal(json_array_size(d), 2);
	char *a = row(d, 0), *b = row(d, 1);
	assert_string_equal(a, "{\"aiCorePercent\":17,\"busId\":\"0000:07:00.0\",\"cardId\":0,\"chipId\":0,\"chipName\":"
			       "\"NVIDIA A100\",\"hbmTotalMB\":81920,\"hbmUsedMB\":1024,\"health\":\"OK\",\"hostIndex\":0,"
			       "\"powerW\":61.5,\"temperatureC\":33}");
	assert_string_equal(b, "{\"aiCorePercent\":null,\"busId\":\"0000:8A:00.0\",\"cardId\":3,\"chipId\":0,\"chipName\":"
			       "\"NVIDIA H100\",\"hbmTotalMB\":81559,\"hbmUsedMB\":0,\"health\":\"OK\",\"hostIndex\":3,"
			       "\"powerW\":70.12,\"temperatureC\":30}");
	free(a);
	free(b);
	json_decref(d);
}

static void without_readings_health_is_unknown(void **state)
{
	(void)state;
	gpu("0000:07:00.0", "Model: NVIDIA A100\nDevice Minor: 0\n");
	json_t *d = sbx_gpu_nvidia_parse(dir, NULL);
	assert_int_equal(json_array_size(d), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(d, 0), "health")), "Unknown");
	assert_true(json_is_null(json_object_get(json_array_get(d, 0), "busId")));
	json_decref(d);
	json_t *none = sbx_gpu_nvidia_parse("/nonexistent", NULL);
	assert_int_equal(json_array_size(none), 0);
	json_decref(none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(joins_on_bus_id_sorted_by_minor, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(without_readings_health_is_unknown, make_dir, remove_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
