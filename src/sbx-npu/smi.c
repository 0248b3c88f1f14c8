/* smi.c — the two npu-smi tables into devices: `|` rows of `info`
 * until "Process id" (a head row per card, chip rows under it), and the
 * whitespace columns of `info -m` for each chip's logic id. */
#include "smi.h"

#include "../lib/json.h"
#include "../lib/text.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CELLS 8

static bool all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

/* "| a | b | c |" into trimmed cells, the empty ends dropped. */
static int cells(char *line, char **out)
{
	int n = 0;
	char *p = line + 1;
	while (n < MAX_CELLS) {
		char *bar = strchr(p, '|');
		if (!bar)
			break;
		*bar = '\0';
		out[n++] = sbx_trim(p);
		p = bar + 1;
	}
	return n;
}

/* The whitespace-separated tokens of s (at most max). */
static int tokens(char *s, char **out, int max)
{
	int n = 0;
	for (char *save = NULL, *t = strtok_r(s, " \t", &save); t && n < max; t = strtok_r(NULL, " \t", &save))
		out[n++] = t;
	return n;
}

/* "a b / c d / e": AI core %, memory used/total, HBM used/total. */
static void chip_readings(char *text, json_t *dev)
{
	char *t[8];
	for (char *p = text; *p; p++)
		if (*p == '/')
			*p = ' ';
	int n = tokens(text, t, 8);
	if (n == 5) {
		json_object_set_new(dev, "aiCorePercent", sbx_json_reading(t[0]));
		json_object_set_new(dev, "hbmUsedMB", sbx_json_reading(t[3]));
		json_object_set_new(dev, "hbmTotalMB", sbx_json_reading(t[4]));
	}
}

static json_t *parse_info(const char *info)
{
	json_t *devices = json_array(), *card = NULL;
	char *copy = strdup(info ? info : "");
	for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, "Process id"))
			break;
		char *l = sbx_trim(line), *c[MAX_CELLS];
		if (*l != '|')
			continue;
		if (cells(l, c) < 3)
			continue;
		if (all_digits(c[0])) {
			/* a chip of the last card */
			if (!card)
				continue;
			json_t *dev = json_deep_copy(card);
			json_object_set_new(dev, "chipId", json_integer(atoll(c[0])));
			json_object_set_new(dev, "busId", json_string(c[1]));
			chip_readings(c[2], dev);
			json_array_append_new(devices, dev);
			continue;
		}
		/* a card's head row: "<id> <name with letters>" */
		char *sp = c[0] + strcspn(c[0], " \t"), *t[4];
		if (!*sp)
			continue;
		*sp = '\0';
		char *name = sbx_trim(sp + 1);
		bool letters = false;
		for (char *p = name; *p; p++)
			letters = letters || isalpha((unsigned char)*p);
		if (!all_digits(c[0]) || !letters)
			continue;
		json_decref(card);
		card = json_pack("{s:I,s:s,s:s}", "cardId", (json_int_t)atoll(c[0]), "chipName", name, "health", c[1]);
		int n = tokens(c[2], t, 4);
		json_object_set_new(card, "powerW", n > 0 ? sbx_json_reading(t[0]) : json_null());
		json_object_set_new(card, "temperatureC", n > 1 ? sbx_json_reading(t[1]) : json_null());
	}
	json_decref(card);
	free(copy);
	return devices;
}

/* Splits on runs of two or more spaces. */
static int columns(char *line, char **out, int max)
{
	int n = 0;
	char *p = sbx_trim(line);
	while (*p && n < max) {
		char *gap = strstr(p, "  ");
		if (gap)
			*gap = '\0';
		out[n++] = sbx_trim(p);
		if (!gap)
			break;
		p = gap + 2;
		while (*p == ' ')
			p++;
	}
	return n;
}

json_t *sbx_npu_smi_parse(const char *info, const char *mapping)
{
	json_t *devices = parse_info(info);
	json_t *logic = json_object(); /* "card:chip" -> {logic, name} */
	char *copy = strdup(mapping ? mapping : "");
	for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c[6], key[64];
		if (columns(line, c, 6) < 4 || !all_digits(c[0]) || !all_digits(c[1]) || !all_digits(c[2]))
			continue; /* headers, and the Mcu's "-" logic id */
		const char *name = !strncmp(c[3], "Ascend ", 7) ? c[3] + 7 : c[3];
		snprintf(key, sizeof(key), "%.20s:%.20s", c[0], c[1]);
		json_object_set_new(logic, key, json_pack("{s:I,s:s}", "logic", (json_int_t)atoll(c[2]), "name", name));
	}
	free(copy);
	size_t i;
	json_t *dev;
	json_array_foreach(devices, i, dev) {
		char key[64];
		snprintf(key, sizeof(key), "%lld:%lld", (long long)json_integer_value(json_object_get(dev, "cardId")),
			 (long long)json_integer_value(json_object_get(dev, "chipId")));
		json_t *m = json_object_get(logic, key);
		json_object_set(dev, "hostIndex", m ? json_object_get(m, "logic") : json_object_get(dev, "cardId"));
		if (m)
			json_object_set(dev, "chipName", json_object_get(m, "name"));
	}
	json_decref(logic);
	return devices;
}
