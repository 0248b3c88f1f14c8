/* fragment.c — chips into binds and environment, per vendor: Ascend's
 * davinci nodes and CANN variables (sandbox.md 2.4), NVIDIA's nvidiaN
 * nodes, control nodes and driver libraries. */
#include "fragment.h"
#include "../lib/path.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *node_prefix(const struct sbx_npu_config *cfg)
{
	return cfg->vendor == SBX_NPU_NVIDIA ? "nvidia" : "davinci";
}

void sbx_npu_node_path(const struct sbx_npu_config *cfg, int index, char *out, size_t size)
{
	snprintf(out, size, "%s/%s%d", cfg->dev_root, node_prefix(cfg), index);
}

static bool is_char_device(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

static void add_node(json_t *nodes, const char *host, const char *sandbox)
{
	json_array_append_new(nodes, json_pack("{s:s,s:s}", "host", host, "sandbox", sandbox));
}

/* Management and control nodes are bound in place, when the host has them. */
static void add_present(const struct sbx_npu_config *cfg, json_t *nodes, const char *const *names)
{
	for (size_t i = 0; names[i]; i++) {
		char host[PATH_MAX + 64], sandbox[80];
		snprintf(host, sizeof(host), "%s/%s", cfg->dev_root, names[i]);
		snprintf(sandbox, sizeof(sandbox), "/dev/%s", names[i]);
		if (is_char_device(host))
			add_node(nodes, host, sandbox);
	}
}

/* /usr is in every sandbox already; anything else the tools need is bound. */
static void add_outside_usr(json_t *ro, const char *path)
{
	if (path[0] == '/' && !sbx_path_is_within("/usr", path) && access(path, F_OK) == 0)
		json_array_append_new(ro, json_string(path));
}

static void ascend_env(const struct sbx_npu_config *cfg, json_t *env)
{
	const char *tk = cfg->toolkit, *drv = cfg->driver;
	char buf[8 * PATH_MAX];

	json_object_set_new(env, "ASCEND_AICPU_PATH", json_string(tk));
	json_object_set_new(env, "ASCEND_HOME_PATH", json_string(tk));
	snprintf(buf, sizeof(buf), "%s/opp", tk);
	json_object_set_new(env, "ASCEND_OPP_PATH", json_string(buf));
	json_object_set_new(env, "ASCEND_TOOLKIT_HOME", json_string(tk));
	snprintf(buf, sizeof(buf), "%s/toolkit", tk);
	json_object_set_new(env, "TOOLCHAIN_HOME", json_string(buf));
	/* common/: libascend_hal links libc_sec.so. */
	snprintf(buf, sizeof(buf), "%s/lib64:%s/lib64/common:%s/lib64/driver:%s/lib64:%s/lib64/plugin/opskernel:"
		 "%s/lib64/plugin/nnengine", drv, drv, drv, tk, tk, tk);
	json_object_set_new(env, "LD_LIBRARY_PATH", json_string(buf));
	snprintf(buf, sizeof(buf), "%s/python/site-packages:%s/opp/built-in/op_impl/ai_core/tbe", tk, tk);
	json_object_set_new(env, "PYTHONPATH", json_string(buf));
}

json_t *sbx_npu_fragment(const struct sbx_npu_config *cfg, const int *chips, size_t n)
{
	static const char *const ascend_mgmt[] = { "davinci_manager", "devmm_svm", "hisi_hdc", NULL };
	static const char *const nvidia_ctl[] = { "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", NULL };
	json_t *indices = json_array(), *nodes = json_array(), *ro = json_array(), *env = json_object();

	for (size_t i = 0; i < n; i++) {
		char host[PATH_MAX + 32], sandbox[64];
		sbx_npu_node_path(cfg, chips[i], host, sizeof(host));
		snprintf(sandbox, sizeof(sandbox), "/dev/%s%zu", node_prefix(cfg), i);
		add_node(nodes, host, sandbox);
		json_array_append_new(indices, json_integer(chips[i]));
	}
	json_t *frag = json_pack("{s:s,s:o,s:o,s:o,s:o}", "vendor", sbx_npu_vendor_name(cfg->vendor),
				 "hostIndices", indices, "nodes", nodes, "readOnly", ro, "env", env);
	if (cfg->vendor == SBX_NPU_ASCEND) {
		add_present(cfg, nodes, ascend_mgmt);
		if (access(cfg->install_info, R_OK) == 0)
			json_array_append_new(ro, json_string(cfg->install_info));
		add_outside_usr(ro, cfg->npu_smi);
		add_outside_usr(ro, cfg->driver);
		add_outside_usr(ro, cfg->toolkit);
		ascend_env(cfg, env);
		/* npu-smi lives in /usr/local/bin on real hosts. */
		json_object_set_new(frag, "pathPrefix", json_string("/usr/local/bin"));
	} else {
		add_present(cfg, nodes, nvidia_ctl);
		add_outside_usr(ro, cfg->nvidia_smi);
		if (cfg->nvidia_libs[0]) {
			add_outside_usr(ro, cfg->nvidia_libs);
			json_object_set_new(env, "LD_LIBRARY_PATH", json_string(cfg->nvidia_libs));
		}
	}
	return frag;
}

json_t *sbx_npu_probe_argv(const struct sbx_npu_config *cfg)
{
	if (cfg->vendor == SBX_NPU_NVIDIA)
		return json_pack("[s]", cfg->nvidia_smi);
	return json_pack("[s,s]", cfg->npu_smi, "info");
}
