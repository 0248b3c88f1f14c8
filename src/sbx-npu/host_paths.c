/* host_paths.c — accelerator host paths: real-host defaults, environment
 * overrides. */
#include "host_paths.h"
#include "../lib/fnv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Paths longer than PATH_MAX are dropped, never cut to another path. */
static void put(char *out, const char *path)
{
	size_t n = strlen(path);
	if (n >= PATH_MAX)
		n = 0;
	memcpy(out, path, n);
	out[n] = '\0';
}

static void set(char *out, const char *env, const char *dflt)
{
	const char *v = getenv(env);
	put(out, v && *v ? v : dflt);
}

static void find_tool(char *out, const char *env, const char *const *candidates)
{
	const char *v = getenv(env);
	out[0] = '\0';
	if (v && *v) {
		if (access(v, X_OK) == 0)
			put(out, v);
		return;
	}
	for (size_t i = 0; candidates[i]; i++)
		if (access(candidates[i], X_OK) == 0) {
			put(out, candidates[i]);
			return;
		}
}

void sbx_npu_config_from_env(enum sbx_npu_vendor vendor, struct sbx_npu_config *cfg)
{
	static const char *const npu_smi[] = { "/usr/local/bin/npu-smi", "/usr/local/sbin/npu-smi", "/usr/bin/npu-smi", NULL };
	static const char *const nvidia_smi[] = { "/usr/bin/nvidia-smi", "/usr/local/bin/nvidia-smi", NULL };

	memset(cfg, 0, sizeof(*cfg));
	cfg->vendor = vendor;
	set(cfg->dev_root, "SBX_DEV_ROOT", "/dev");
	find_tool(cfg->npu_smi, "SCIENCE_AGENT_NPU_SMI_PATH", npu_smi);
	set(cfg->driver, "SBX_ASCEND_DRIVER", "/usr/local/Ascend/driver");
	char dcmi[PATH_MAX + 32];
	snprintf(dcmi, sizeof(dcmi), "%s/lib64/driver/libdcmi.so", cfg->driver);
	set(cfg->dcmi, "SBX_DCMI_LIBRARY", dcmi);
	set(cfg->toolkit, "SCIENCE_AGENT_ASCEND_TOOLKIT", "/usr/local/Ascend/ascend-toolkit/latest");
	set(cfg->install_info, "SBX_ASCEND_INSTALL_INFO", "/etc/ascend_install.info");
	find_tool(cfg->nvidia_smi, "SBX_NVIDIA_SMI_PATH", nvidia_smi);
	set(cfg->proc_root, "SBX_NVIDIA_PROC_ROOT", "/proc/driver/nvidia");
	set(cfg->nvidia_libs, "SBX_NVIDIA_LIB_DIR", "");
}

const char *sbx_npu_vendor_name(enum sbx_npu_vendor vendor)
{
	return vendor == SBX_NPU_NVIDIA ? "nvidia" : "ascend";
}

uint64_t sbx_npu_config_key(const struct sbx_npu_config *cfg)
{
	const char *parts[] = { sbx_npu_vendor_name(cfg->vendor), cfg->dev_root, cfg->launch, cfg->npu_smi,
				cfg->dcmi, cfg->toolkit, cfg->driver, cfg->install_info, cfg->nvidia_smi,
				cfg->proc_root, cfg->nvidia_libs };
	uint64_t h = SBX_FNV_INIT;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		h = sbx_fnv1a64(h, parts[i], strlen(parts[i]) + 1);
	return h;
}

const char *sbx_npu_unit(const struct sbx_npu_config *cfg)
{
	return cfg->vendor == SBX_NPU_NVIDIA ? "GPU" : "NPU";
}
