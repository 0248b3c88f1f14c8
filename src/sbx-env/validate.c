/* validate.c — environments.md 1.10, plus what upstream misses: no package
 * spec may start with '-' (an option in disguise), no whitespace or
 * control byte anywhere, indexUrl HTTPS without credentials, query or
 * fragment, channels compared exactly against the allowlist. */
#include "env.h"
#include "../lib/exitcodes.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int bad(struct sbx_error *e, const char *fmt, const char *a)
{
	sbx_error_set(e, SBX_EXIT_USAGE, "bad-request", fmt, a);
	return -1;
}

/* Trimmed copy; false when it does not fit. */
static bool trim(const char *raw, char *out, size_t size)
{
	while (isspace((unsigned char)*raw))
		raw++;
	size_t n = strlen(raw);
	while (n && isspace((unsigned char)raw[n - 1]))
		n--;
	if (n >= size)
		return false;
	memcpy(out, raw, n);
	out[n] = '\0';
	return true;
}

int env_valid_name(const char *raw, char *out, size_t size, struct sbx_error *e)
{
	char t[256];
	size_t n = 0;
	if (!trim(raw, t, sizeof(t)))
		return bad(e, "%s", "Environment name must be 1-80 safe display characters");
	/* whitespace runs become one space */
	for (const char *p = t; *p && n + 1 < size; p++) {
		if (isspace((unsigned char)*p)) {
			if (n && out[n - 1] != ' ')
				out[n++] = ' ';
		} else {
			out[n++] = *p;
		}
	}
	out[n] = '\0';
	bool ok = n >= 1 && n <= 80 && isalnum((unsigned char)out[0]);
	for (size_t i = 0; ok && i < n; i++)
		ok = isalnum((unsigned char)out[i]) || strchr(" ._-", out[i]);
	return ok ? 0 : bad(e, "%s", "Environment name must be 1-80 safe display characters");
}

static bool in_class(char c, const char *extra)
{
	return isalnum((unsigned char)c) || (c && strchr(extra, c));
}

/* ^[a-zA-Z0-9_.:+-]+(?:[<>=!~][a-zA-Z0-9_.:+*!<>=~-]+)?$, never starting with '-' */
int env_valid_package(const char *raw, char *out, size_t size, struct sbx_error *e)
{
	char shown[200];
	snprintf(shown, sizeof(shown), "%.160s", raw);
	for (char *p = shown; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	if (!trim(raw, out, size) || !*out || strlen(out) > 160 || out[0] == '-')
		return bad(e, "Invalid package specification: %s", shown);
	const char *p = out;
	while (in_class(*p, "_.:+-"))
		p++;
	if (p == out)
		return bad(e, "Invalid package specification: %s", shown);
	if (*p && strchr("<>=!~", *p)) {
		const char *q = ++p;
		while (in_class(*p, "_.:+*!<>=~-"))
			p++;
		if (p == q)
			return bad(e, "Invalid package specification: %s", shown);
	}
	return *p ? bad(e, "Invalid package specification: %s", shown) : 0;
}

int env_valid_index_url(const char *raw, char *out, size_t size, struct sbx_error *e)
{
	char t[4096];
	if (!trim(raw, t, sizeof(t)) || !*t)
		return bad(e, "%s", strlen(raw) ? "pip indexUrl is too long" : "pip indexUrl cannot be empty");
	if (strlen(t) > 2048)
		return bad(e, "%s", "pip indexUrl is too long");
	for (const char *p = t; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return bad(e, "%s", "pip indexUrl cannot contain whitespace or control characters");
	const char *sep = strstr(t, "://");
	if (!sep || sep == t)
		return bad(e, "%s", "pip indexUrl must be a valid HTTPS URL");
	if ((size_t)(sep - t) != 5 || strncasecmp(t, "https", 5) != 0)
		return bad(e, "%s", "pip indexUrl must use HTTPS");
	const char *host = sep + 3;
	size_t auth = strcspn(host, "/?#");
	if (auth == 0)
		return bad(e, "%s", "pip indexUrl must use HTTPS");
	if (memchr(host, '@', auth))
		return bad(e, "%s", "pip indexUrl cannot contain credentials");
	if (strpbrk(host, "?#"))
		return bad(e, "%s", "pip indexUrl cannot contain a query or fragment");
	if (snprintf(out, size, "https://%s", host) >= (int)size)
		return bad(e, "%s", "pip indexUrl is too long");
	size_t n = strlen(out);
	if (n > 8 && out[n - 1] == '/')
		out[n - 1] = '\0';
	return 0;
}

static const char *const preset_channels[] = {
	"conda-forge", "https://mirrors.tuna.tsinghua.edu.cn/anaconda/cloud/conda-forge",
	"https://mirrors.ustc.edu.cn/anaconda/cloud/conda-forge", NULL,
};

static bool allowed_channel(const struct envctx *c, const char *ch)
{
	for (int i = 0; i < c->n_channels; i++)
		if (!strcmp(c->channels[i], ch))
			return true;
	for (int i = 0; preset_channels[i]; i++)
		if (!strcmp(preset_channels[i], ch))
			return true;
	return false;
}

static int by_text(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* Unique and sorted; none requested: the configured list. */
int env_valid_channels(const struct envctx *c, json_t *requested, json_t **out, struct sbx_error *e)
{
	json_t *list = json_array();
	size_t i;
	json_t *v;
	if (json_array_size(requested) == 0) {
		for (int k = 0; k < c->n_channels; k++)
			json_array_append_new(list, json_string(c->channels[k]));
		*out = list;
		return 0;
	}
	char refused[1024] = "";
	json_array_foreach(requested, i, v) {
		const char *ch = json_string_value(v);
		if (!ch || !allowed_channel(c, ch)) {
			snprintf(refused + strlen(refused), sizeof(refused) - strlen(refused), "%s%.200s", *refused ? ", " : "",
				 ch ? ch : "(not a string)");
			continue;
		}
		bool dup = false;
		for (size_t k = 0; k < json_array_size(list); k++)
			dup = dup || !strcmp(json_string_value(json_array_get(list, k)), ch);
		if (!dup)
			json_array_append_new(list, json_string(ch));
	}
	if (*refused) {
		json_decref(list);
		return bad(e, "Package channels are not allowed: %s", refused);
	}
	size_t n = json_array_size(list);
	json_t **items = calloc(n ? n : 1, sizeof(*items));
	for (size_t k = 0; k < n; k++)
		items[k] = json_incref(json_array_get(list, k));
	qsort(items, n, sizeof(*items), by_text);
	json_array_clear(list);
	for (size_t k = 0; k < n; k++)
		json_array_append_new(list, items[k]);
	free(items);
	*out = list;
	return 0;
}
