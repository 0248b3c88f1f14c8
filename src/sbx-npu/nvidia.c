/* nvidia.c — /proc/driver/nvidia/gpus/<bus>/information ("Key: value"
 * lines) and nvidia-smi's CSV rows, joined on the PCI address. */
#include "nvidia.h"

#include "../lib/json.h"
#include "../lib/text.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GPUS 64

/* nvidia-smi prints 8 hex digits of domain, the kernel 4: compare the
 * last 12 characters ("0000:07:00.0"), case-folded. */
static void bus_key(const char *bus, char out[13])
{
	size_t n = strlen(bus);
	const char *tail = n > 12 ? bus + n - 12 : bus;
	size_t i = 0;
	for (; i < 12 && tail[i]; i++)
		out[i] = (char)tolower((unsigned char)tail[i]);
	out[i] = '\0';
}

/* The CSV row whose bus id matches, applied to dev. */
static void apply_readings(json_t *dev, const char *query, const char *key)
{
	static const char *const fields[] = { NULL, NULL, "aiCorePercent", "hbmUsedMB", "hbmTotalMB", "powerW",
					      "temperatureC" };
	if (!query)
		return;
	char *copy = strdup(query), *save = NULL;
	for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
		char *cells[7] = { 0 }, *cell_save = NULL;
		int n = 0;
		for (char *c = strtok_r(line, ",", &cell_save); c && n < 7; c = strtok_r(NULL, ",", &cell_save))
			cells[n++] = sbx_trim(c);
		char row_key[13];
		if (n < 7)
			continue;
		bus_key(cells[0], row_key);
		if (strcmp(row_key, key) != 0)
			continue;
		json_object_set_new(dev, "health", json_string("OK"));
		for (int i = 2; i < 7; i++)
			json_object_set_new(dev, fields[i], sbx_json_reading(cells[i]));
		break;
	}
	free(copy);
}

static json_t *read_gpu(const char *dir, const char *query)
{
	char path[4096 + 320], line[512];
	snprintf(path, sizeof(path), "%s/information", dir);
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char model[256] = "", bus[64] = "";
	long minor = -1;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		char *key = sbx_trim(line), *value = sbx_trim(colon + 1);
		if (strcmp(key, "Model") == 0)
			snprintf(model, sizeof(model), "%s", value);
		else if (strcmp(key, "Bus Location") == 0)
			snprintf(bus, sizeof(bus), "%s", value);
		else if (strcmp(key, "Device Minor") == 0) {
			char *end;
			minor = strtol(value, &end, 10);
			if (end == value || *end || minor < 0 || minor > 255)
				minor = -1;
		}
	}
	fclose(f);
	if (minor < 0)
		return NULL;
	char key[13];
	bus_key(bus, key);
	json_t *dev = json_pack("{s:I,s:I,s:i,s:s,s:s,s:o,s:n,s:n,s:n,s:n,s:n}", "hostIndex", (json_int_t)minor,
				"cardId", (json_int_t)minor, "chipId", 0, "chipName", model, "health", "Unknown",
				"busId", bus[0] ? json_string(bus) : json_null(), "aiCorePercent", "hbmUsedMB", "hbmTotalMB", "powerW",
				"temperatureC");
	if (dev)
		apply_readings(dev, query, key);
	return dev;
}

static int by_index(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "hostIndex"));
	json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "hostIndex"));
	return (x > y) - (x < y);
}

json_t *sbx_gpu_nvidia_parse(const char *proc_root, const char *query)
{
	char path[4096];
	json_t *found[MAX_GPUS];
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/gpus", proc_root);
	DIR *d = opendir(path);
	struct dirent *ent;
	while (d && n < MAX_GPUS && (ent = readdir(d))) {
		if (ent->d_name[0] == '.')
			continue;
		char dir[4096 + 256];
		snprintf(dir, sizeof(dir), "%s/%.255s", path, ent->d_name);
		json_t *dev = read_gpu(dir, query);
		if (dev)
			found[n++] = dev;
	}
	if (d)
		closedir(d);
	qsort(found, n, sizeof(json_t *), by_index);
	json_t *devices = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(devices, found[i]);
	return devices;
}
