/* af3.c — the AlphaFold3-intent check (npu.md 2.6): a config that names
 * AF3 directories or an AF3 backend is refused for workloads that ask. */
#include "broker.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/json.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CONFIG_MAX (16u << 20)

static const char *const hit_keys[] = { "af3_dir", "af3_model_dir", "af3_db_dir", "model_dir", "db_dir", "use_af3", NULL };
static const char *const backend_keys[] = { "backend", "model_backend", "pipeline", "pipeline_backend", "predictor",
					    "structure_model", "structure_predictor", "workload", "workload_id",
					    "workloadid", NULL };

static bool listed(const char *key, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (!strcmp(key, list[i]))
			return true;
	return false;
}

static bool mentions_af3(const char *value)
{
	char lower[512];
	size_t i = 0;
	for (; i < sizeof(lower) - 1 && value[i]; i++)
		lower[i] = (char)tolower((unsigned char)value[i]);
	lower[i] = '\0';
	return strstr(lower, "af3") || strstr(lower, "alphafold");
}

/* Objects are walked; arrays are not (as upstream). */
static bool walk(const json_t *obj, int depth)
{
	const char *key;
	json_t *v;
	if (depth > 64)
		return false;
	json_object_foreach((json_t *)obj, key, v) {
		char norm[256];
		size_t i = 0;
		for (; i < sizeof(norm) - 1 && key[i]; i++)
			norm[i] = key[i] == '-' ? '_' : (char)tolower((unsigned char)key[i]);
		norm[i] = '\0';
		if (listed(norm, hit_keys))
			return true;
		if (listed(norm, backend_keys) && json_is_string(v) && mentions_af3(json_string_value(v)))
			return true;
		if (json_is_object(v) && walk(v, depth + 1))
			return true;
	}
	return false;
}

int broker_af3_check(const char *workspace, const json_t *inputs, const char *workload_id, struct sbx_error *e)
{
	char *path = broker_workspace_input(workload_id, workspace, inputs, "configPath", e);
	if (!path)
		return -1;
	free(path);
	/* Read from an fd opened below the workspace (never by the name just
	 * checked: a swap since then changes nothing), a regular file only (a
	 * FIFO would hold the submit), at most CONFIG_MAX. */
	struct stat st;
	const char *rel = json_string_value(json_object_get(inputs, "configPath"));
	while (rel && (*rel == ' ' || *rel == '\t'))
		rel++;
	int fd = rel ? broker_open_input(workspace, rel, &st) : -1;
	char *text = NULL;
	size_t len = 0;
	struct sbx_error ignored;
	if (fd >= 0 && st.st_size <= (off_t)CONFIG_MAX)
		text = sbx_read_fd_capped(fd, CONFIG_MAX, &len, "configPath", &ignored);
	if (fd >= 0)
		close(fd);
	json_t *doc = text ? sbx_json_parse(text, len, "configPath", &ignored) : NULL;
	free(text);
	bool hit = json_is_object(doc) && walk(doc, 0);
	json_decref(doc);
	if (hit) {
		sbx_error_set(e, SBX_EXIT_USAGE, "af3-intent", "%s",
			      "Configuration appears to target AlphaFold3; the built-in NPU Broker allowlist only exposes "
			      "antibody.protenix.v1");
		return -1;
	}
	return 0;
}
