/* select.c — resolving a chip selection (sandbox.md 5): sort, drop
 * repeats, look each chip up in a fresh listing restricted to the
 * selection, probe those, and refuse with every reason at once. */
#include "select.h"
#include "../lib/exitcodes.h"
#include "fragment.h"
#include "inventory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *find(json_t *devices, int index)
{
	size_t i;
	json_t *d;
	json_array_foreach(devices, i, d)
		if (json_integer_value(json_object_get(d, "hostIndex")) == index)
			return d;
	return NULL;
}

static void append(char *buf, size_t size, const char *text)
{
	size_t len = strlen(buf);
	/* Cut at the end of the buffer: the message has its own cap anyway. */
	if (len < size - 1 && snprintf(buf + len, size - len, "%s%s", len ? " " : "", text) >= (int)(size - len))
		buf[size - 1] = '\0';
}

json_t *sbx_npu_select(const struct sbx_npu_config *cfg, const int *chips, size_t n, struct sbx_error *e)
{
	const char *unit = sbx_npu_unit(cfg);
	json_t *inv = sbx_npu_inventory_read(cfg), *all = json_object_get(inv, "devices"), *mine = json_array();
	bool supported = json_is_true(json_object_get(inv, "supported"));
	char reasons[900] = "", one[1300];

	for (size_t i = 0; i < n; i++) {
		json_t *d = find(all, chips[i]);
		if (d)
			json_array_append(mine, d);
	}
	sbx_npu_probe_devices(cfg, mine);
	for (size_t i = 0; i < n; i++) {
		json_t *d = find(mine, chips[i]);
		if (!d && !supported)
			snprintf(one, sizeof(one), "This machine reports no %s, so %s %d cannot be selected.",
				 cfg->vendor == SBX_NPU_NVIDIA ? "NVIDIA GPUs" : "Ascend NPU cards", unit, chips[i]);
		else if (!d)
			snprintf(one, sizeof(one), "%s %d is no longer present on this machine.", unit, chips[i]);
		else if (!json_is_true(json_object_get(d, "sandboxUsable")))
			snprintf(one, sizeof(one), "%s", json_string_value(json_object_get(d, "sandboxUnusableReason")));
		else
			continue;
		append(reasons, sizeof(reasons), one);
	}
	json_decref(mine);
	json_decref(inv);
	if (reasons[0]) {
		sbx_error_set(e, SBX_EXIT_POLICY, "npu-unavailable", "Requested %s cards are not usable on this machine: %s",
			      unit, reasons);
		return NULL;
	}
	return sbx_npu_fragment(cfg, chips, n);
}
