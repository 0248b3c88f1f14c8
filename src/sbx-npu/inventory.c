/* inventory.c — listing accelerators: run the vendor's tools (20 s,
 * 1 MiB each), parse, and keep a probed listing for 60 s. */
#include "inventory.h"
#include "../lib/atomic_file.h"
#include "../lib/clock.h"
#include "nvidia.h"
#include "../lib/io.h"
#include "dcmi.h"
#include "smi.h"
#include "tool_output.h"
#include "../lib/spawn.h"
#include "../lib/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#define TOOL_OUTPUT_CAP (1u << 20)

/* Runs a status tool; 0 with its stdout, or -1 with why. */
static int run_tool(const char *const *argv, struct sbx_capture *c, char *why, size_t size)
{
	struct sbx_spawn s = { .argv = argv, .stdin_fd = -1, .new_process_group = true, .die_with_parent = true };
	struct sbx_error e;

	if (sbx_spawn_capture(&s, SBX_NPU_TOOL_TIMEOUT_MS, TOOL_OUTPUT_CAP, c, &e) != 0) {
		snprintf(why, size, "%s", e.message);
		return -1;
	}
	if (c->timed_out || !WIFEXITED(c->status) || WEXITSTATUS(c->status) != 0) {
		char line[512];
		sbx_npu_reason_line(c->err, c->out, line, sizeof(line));
		if (c->timed_out)
			snprintf(why, size, "%s timed out after %d s", argv[0], SBX_NPU_TOOL_TIMEOUT_MS / 1000);
		else if (line[0])
			snprintf(why, size, "%s", line);
		else
			snprintf(why, size, "%s exited with status %d", argv[0],
				 WIFEXITED(c->status) ? WEXITSTATUS(c->status) : 128 + WTERMSIG(c->status));
		sbx_capture_free(c);
		return -1;
	}
	return 0;
}

static json_t *inventory(bool supported, const char *source, json_t *devices, const char *error)
{
	char now[SBX_ISO_TIME_SIZE];
	sbx_iso_time(sbx_wall_ms(), now);
	json_t *inv = json_pack("{s:b,s:s*,s:o,s:s}", "supported", supported, "source", source, "devices",
				devices ? devices : json_array(), "capturedAt", now);
	if (error)
		json_object_set_new(inv, "error", json_string(error));
	return inv;
}

static json_t *ascend_read(const struct sbx_npu_config *cfg)
{
	char why[1024];
	json_t *devices = sbx_npu_dcmi_devices(cfg->dcmi, why, sizeof(why));
	if (devices)
		return inventory(true, "dcmi", devices, NULL);
	if (!cfg->npu_smi[0])
		return inventory(false, NULL, NULL, NULL);

	struct sbx_capture info, map;
	const char *info_argv[] = { cfg->npu_smi, "info", NULL };
	const char *map_argv[] = { cfg->npu_smi, "info", "-m", NULL };
	char msg[1200];
	if (run_tool(info_argv, &info, why, sizeof(why)) != 0) {
		snprintf(msg, sizeof(msg), "Could not read NPU status: %s", why);
		return inventory(true, "npu-smi", NULL, msg);
	}
	/* Without the mapping the readings stand alone (hostIndex = card). */
	bool have_map = run_tool(map_argv, &map, why, sizeof(why)) == 0;
	devices = sbx_npu_smi_parse(info.out, have_map ? map.out : NULL);
	bool empty = info.out_len == 0 || strspn(info.out, " \t\r\n") == info.out_len;
	sbx_capture_free(&info);
	if (have_map)
		sbx_capture_free(&map);
	if (empty) {
		json_decref(devices);
		return inventory(true, "npu-smi", NULL, "Could not read NPU status: npu-smi info printed nothing");
	}
	return inventory(true, "npu-smi", devices, NULL);
}

static json_t *nvidia_read(const struct sbx_npu_config *cfg)
{
	char gpus[PATH_MAX + 8], why[1024], msg[1200];
	struct stat st;
	snprintf(gpus, sizeof(gpus), "%s/gpus", cfg->proc_root);
	if (stat(gpus, &st) != 0 || !S_ISDIR(st.st_mode))
		return inventory(false, NULL, NULL, NULL);
	if (!cfg->nvidia_smi[0])
		return inventory(true, "proc", sbx_gpu_nvidia_parse(cfg->proc_root, NULL), NULL);

	struct sbx_capture q;
	const char *argv[] = { cfg->nvidia_smi, "--query-gpu=" SBX_NVIDIA_QUERY, "--format=csv,noheader,nounits", NULL };
	if (run_tool(argv, &q, why, sizeof(why)) != 0) {
		snprintf(msg, sizeof(msg), "Could not read GPU status: %s", why);
		return inventory(true, "proc", sbx_gpu_nvidia_parse(cfg->proc_root, NULL), msg);
	}
	json_t *devices = sbx_gpu_nvidia_parse(cfg->proc_root, q.out);
	sbx_capture_free(&q);
	return inventory(true, "nvidia-smi", devices, NULL);
}

json_t *sbx_npu_inventory_read(const struct sbx_npu_config *cfg)
{
	return cfg->vendor == SBX_NPU_NVIDIA ? nvidia_read(cfg) : ascend_read(cfg);
}

static json_t *cached(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0 || time(NULL) - st.st_mtime >= SBX_NPU_CACHE_TTL_S || time(NULL) < st.st_mtime)
		return NULL;
	size_t len;
	struct sbx_error e;
	char *text = sbx_read_file_capped(path, 4u << 20, &len, &e);
	json_t *inv = text ? json_loadb(text, len, 0, NULL) : NULL;
	free(text);
	if (inv && !json_is_array(json_object_get(inv, "devices"))) {
		json_decref(inv);
		return NULL;
	}
	return inv;
}

json_t *sbx_npu_inventory(const struct sbx_npu_config *cfg, const char *cache_dir, bool refresh)
{
	char path[PATH_MAX + 64];
	struct sbx_error e;
	snprintf(path, sizeof(path), "%s/npu-%016llx.json", cache_dir,
		 (unsigned long long)sbx_npu_config_key(cfg));
	json_t *inv = refresh ? NULL : cached(path);
	if (inv)
		return inv;
	inv = sbx_npu_inventory_read(cfg);
	sbx_npu_probe_devices(cfg, json_object_get(inv, "devices"));
	if (!json_object_get(inv, "error") && sbx_mkdir_p(cache_dir, 0700, &e) == 0) {
		char *text = json_dumps(inv, JSON_COMPACT);
		if (text)
			(void)sbx_atomic_write(path, text, strlen(text), 0600, &e);
		free(text);
	}
	return inv;
}
