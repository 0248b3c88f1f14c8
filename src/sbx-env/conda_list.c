/* conda_list.c — micromamba's package list, both shapes it has printed. */
#include "conda_list.h"

#include <stdio.h>
#include <string.h>

json_t *sbx_conda_list(const char *text)
{
	json_t *doc = json_loads(text ? text : "", 0, NULL);
	if (json_is_object(doc) && json_is_array(json_object_get(doc, "packages"))) {
		json_t *p = json_incref(json_object_get(doc, "packages"));
		json_decref(doc);
		doc = p;
	}
	if (!json_is_array(doc)) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

json_t *sbx_conda_package_lines(const json_t *packages, const char *runtime, char *version, size_t size)
{
	json_t *lines = json_array(), *p;
	size_t i;
	json_array_foreach(packages, i, p) {
		const char *name = json_string_value(json_object_get(p, "name"));
		const char *ver = json_string_value(json_object_get(p, "version"));
		const char *build = json_string_value(json_object_get(p, "build_string"));
		if (!name || !ver)
			continue;
		char line[512];
		snprintf(line, sizeof(line), "%.200s=%.100s%s%.150s", name, ver, build ? "=" : "", build ? build : "");
		json_array_append_new(lines, json_string(line));
		if (!strcmp(name, runtime))
			snprintf(version, size, "%s", ver);
	}
	return lines;
}
