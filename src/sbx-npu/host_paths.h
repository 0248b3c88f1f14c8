/* host_paths.h — where the host's accelerator tools, libraries and device
 * nodes are: defaults of a real Ascend or NVIDIA host, each overridable by
 * an environment variable (and by sbx-npu's flags). */
#ifndef SBX_NPU_CONFIG_H
#define SBX_NPU_CONFIG_H

#include <limits.h>
#include <stdint.h>

enum sbx_npu_vendor { SBX_NPU_ASCEND, SBX_NPU_NVIDIA };

struct sbx_npu_config {
	enum sbx_npu_vendor vendor;
	char dev_root[PATH_MAX];     /* where the device nodes are: /dev */
	char launch[PATH_MAX];       /* sbx-launch, for probes */
	/* Ascend */
	char npu_smi[PATH_MAX];      /* empty: none installed */
	char dcmi[PATH_MAX];         /* libdcmi.so; empty: DCMI off */
	char toolkit[PATH_MAX];      /* the CANN toolkit (…/ascend-toolkit/latest) */
	char driver[PATH_MAX];       /* /usr/local/Ascend/driver */
	char install_info[PATH_MAX]; /* /etc/ascend_install.info */
	/* NVIDIA */
	char nvidia_smi[PATH_MAX];   /* empty: none installed */
	char proc_root[PATH_MAX];    /* /proc/driver/nvidia */
	char nvidia_libs[PATH_MAX];  /* driver libraries outside /usr; empty: none */
};

/* Fills cfg for vendor from the environment:
 *   SCIENCE_AGENT_NPU_SMI_PATH (else the first executable of
 *   /usr/local/bin, /usr/local/sbin, /usr/bin), SBX_DCMI_LIBRARY,
 *   SCIENCE_AGENT_ASCEND_TOOLKIT, SBX_ASCEND_DRIVER, SBX_ASCEND_INSTALL_INFO,
 *   SBX_NVIDIA_SMI_PATH, SBX_NVIDIA_PROC_ROOT, SBX_NVIDIA_LIB_DIR, SBX_DEV_ROOT. */
void sbx_npu_config_from_env(enum sbx_npu_vendor vendor, struct sbx_npu_config *cfg);
const char *sbx_npu_vendor_name(enum sbx_npu_vendor vendor);
/* A fingerprint of everything that changes an inventory (its cache key). */
uint64_t sbx_npu_config_key(const struct sbx_npu_config *cfg);

/* "NPU" or "GPU": how messages name one device of this vendor. */
const char *sbx_npu_unit(const struct sbx_npu_config *cfg);

#endif
