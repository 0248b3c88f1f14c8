/* chip_probe.c — can a sandbox open this chip? One throwaway launch per
 * chip, through sbx-launch itself with that chip's fragment, so the probe
 * has exactly a real launch's shape: same seccomp profile, identity files,
 * binds and environment (upstream's probe had none of the first two). */
#include "fragment.h"
#include "inventory.h"
#include "tool_output.h"
#include "../lib/spawn.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_PROBES 64
#define PROBE_OUTPUT_CAP (64u << 10)
#define PROBE_TMP_BYTES (64ll << 20)

struct probe {
	const struct sbx_npu_config *cfg;
	int index;
	char chip[128];
	bool usable;
	char reason[1200];
};

/* The spec, in a memfd: sbx-launch reads it from stdin. */
static int spec_fd(const struct sbx_npu_config *cfg, int index)
{
	json_t *spec = json_pack("{s:o,s:o,s:I}", "argv", sbx_npu_probe_argv(cfg), "devices",
				 sbx_npu_fragment(cfg, &index, 1), "tmpSizeBytes", (json_int_t)PROBE_TMP_BYTES);
	char *text = spec ? json_dumps(spec, JSON_COMPACT) : NULL;
	json_decref(spec);
	int fd = text ? memfd_create("sbx-npu-probe", MFD_CLOEXEC) : -1;
	if (fd >= 0 && (write(fd, text, strlen(text)) != (ssize_t)strlen(text) || lseek(fd, 0, SEEK_SET) != 0)) {
		close(fd);
		fd = -1;
	}
	free(text);
	return fd;
}

static void launch_probe(struct probe *p)
{
	const struct sbx_npu_config *cfg = p->cfg;
	const char *unit = sbx_npu_unit(cfg);
	int fd = spec_fd(cfg, p->index);
	if (fd < 0) {
		snprintf(p->reason, sizeof(p->reason), "%s %d cannot be probed: out of memory", unit, p->index);
		return;
	}
	const char *argv[] = { cfg->launch, "-", NULL };
	struct sbx_spawn s = { .argv = argv, .stdin_fd = fd, .new_process_group = true, .die_with_parent = true };
	struct sbx_capture c;
	struct sbx_error e;
	int rc = sbx_spawn_capture(&s, SBX_NPU_TOOL_TIMEOUT_MS, PROBE_OUTPUT_CAP, &c, &e);
	close(fd);
	if (rc != 0) {
		snprintf(p->reason, sizeof(p->reason), "%s %d cannot be probed: %s", unit, p->index, e.message);
		return;
	}
	if (!c.timed_out && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0) {
		p->usable = true;
	} else {
		char line[1024];
		sbx_npu_reason_line(c.err, c.out, line, sizeof(line));
		if (c.timed_out)
			snprintf(line, sizeof(line), "the probe timed out after %d s", SBX_NPU_TOOL_TIMEOUT_MS / 1000);
		else if (!line[0])
			snprintf(line, sizeof(line), "the probe exited with status %d",
				 WIFEXITED(c.status) ? WEXITSTATUS(c.status) : 128 + WTERMSIG(c.status));
		snprintf(p->reason, sizeof(p->reason), "%s %d cannot be opened inside the sandbox: %s", unit,
			 p->index, line);
	}
	sbx_capture_free(&c);
}

static bool ascend_910(const char *name)
{
	return strstr(name, "910") != NULL;
}

static void *probe_one(void *arg)
{
	struct probe *p = arg;
	const struct sbx_npu_config *cfg = p->cfg;
	char node[PATH_MAX + 32];
	struct stat st;

	if (cfg->vendor == SBX_NPU_ASCEND && !ascend_910(p->chip)) {
		snprintf(p->reason, sizeof(p->reason),
			 "Only Ascend 910 series chips are supported; this one reports \"%s\".", p->chip);
		return NULL;
	}
	const char *tool = cfg->vendor == SBX_NPU_NVIDIA ? cfg->nvidia_smi : cfg->npu_smi;
	if (!tool[0]) {
		snprintf(p->reason, sizeof(p->reason), "%s is not installed on this machine.",
			 cfg->vendor == SBX_NPU_NVIDIA ? "nvidia-smi" : "npu-smi");
		return NULL;
	}
	sbx_npu_node_path(cfg, p->index, node, sizeof(node));
	if (stat(node, &st) != 0 || !S_ISCHR(st.st_mode)) {
		snprintf(p->reason, sizeof(p->reason), "%.1000s does not exist on this machine.", node);
		return NULL;
	}
	if (!cfg->launch[0]) {
		snprintf(p->reason, sizeof(p->reason), "%s %d cannot be probed: sbx-launch not found", sbx_npu_unit(cfg),
			 p->index);
		return NULL;
	}
	launch_probe(p);
	return NULL;
}

void sbx_npu_probe_devices(const struct sbx_npu_config *cfg, json_t *devices)
{
	size_t n = json_array_size(devices) < MAX_PROBES ? json_array_size(devices) : MAX_PROBES;
	struct probe *probes = calloc(n ? n : 1, sizeof(*probes));
	pthread_t *threads = calloc(n ? n : 1, sizeof(*threads));
	bool *started = calloc(n ? n : 1, sizeof(*started));

	for (size_t i = 0; probes && threads && started && i < n; i++) {
		json_t *dev = json_array_get(devices, i);
		probes[i].cfg = cfg;
		probes[i].index = (int)json_integer_value(json_object_get(dev, "hostIndex"));
		snprintf(probes[i].chip, sizeof(probes[i].chip), "%s",
			 json_string_value(json_object_get(dev, "chipName")) ? json_string_value(json_object_get(dev, "chipName")) : "");
		started[i] = pthread_create(&threads[i], NULL, probe_one, &probes[i]) == 0;
		if (!started[i])
			probe_one(&probes[i]);
	}
	for (size_t i = 0; i < json_array_size(devices); i++) {
		json_t *dev = json_array_get(devices, i);
		bool ok = probes && threads && started && i < n;
		if (ok && started[i])
			pthread_join(threads[i], NULL);
		json_object_set_new(dev, "sandboxUsable", json_boolean(ok && probes[i].usable));
		if (ok && probes[i].usable)
			json_object_del(dev, "sandboxUnusableReason");
		else
			json_object_set_new(dev, "sandboxUnusableReason",
					    json_string(ok ? probes[i].reason : "too many devices to probe"));
	}
	free(probes);
	free(threads);
	free(started);
}
