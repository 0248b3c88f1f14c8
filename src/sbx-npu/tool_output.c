/* tool_output.c — the line of a vendor tool's or a probe's output that
 * says why it failed. */
#include "tool_output.h"
#include "../lib/text.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool noise(const char *line)
{
	return !*line || *line == '+' || *line == '|' || strncmp(line, "DrvMngGetConsoleLogLevel", 24) == 0;
}

static bool first_line(const char *text, char *out, size_t size)
{
	const char *p = text;
	while (p && *p) {
		const char *end = strchr(p, '\n');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char line[1024];
		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) - 1 ? n : sizeof(line) - 1), p);
		char *s = sbx_trim(line);
		if (!noise(s)) {
			json_t *diag = *s == '{' ? json_loads(s, 0, NULL) : NULL;
			const char *msg = json_string_value(json_object_get(diag, "message"));
			snprintf(out, size, "%s", msg ? msg : s);
			json_decref(diag);
			return true;
		}
		p = end ? end + 1 : NULL;
	}
	return false;
}

void sbx_npu_reason_line(const char *err, const char *out, char *line, size_t size)
{
	line[0] = '\0';
	if (!first_line(err, line, size))
		first_line(out, line, size);
}
