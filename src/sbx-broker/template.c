/* template.c — ${...} in a workload's program and args (npu.md 2.3),
 * resolved when the job starts: every match replaced in place, each
 * expression checked (paths by realpath, inside their roots). */
#include "broker.h"
#include "../lib/exitcodes.h"
#include "../lib/path.h"
#include "../lib/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPANDED_MAX (64u << 10)

static char *fail(struct sbx_error *e, const char *fmt, const char *a, const char *b)
{
	sbx_error_set(e, SBX_EXIT_USAGE, "template", fmt, a, b);
	return NULL;
}


static char *repo_path(const struct broker *b, const char *rel, const char *source, struct sbx_error *e)
{
	char joined[PATH_MAX * 2];
	char *root = realpath(b->root, NULL);
	snprintf(joined, sizeof(joined), "%s/%s", b->root, rel);
	char *real = rel[0] && rel[0] != '/' && root ? realpath(joined, NULL) : NULL;
	if (!real || !sbx_path_is_within(root, real)) {
		free(real);
		free(root);
		return fail(e, "repo: path must resolve inside the repository in NPU workload config: %s%s", source, "");
	}
	free(root);
	return real;
}

static char *evaluate(const struct broker_template_ctx *c, const char *expr, const char *source, int depth,
		      struct sbx_error *e)
{
	if (depth > 4)
		return fail(e, "Unsupported NPU workload command template expression: %s%s", expr, "");
	if (!strcmp(expr, "python")) {
		const char *p = getenv("SCIENCE_AGENT_NPU_PYTHON");
		return strdup(p && *p ? p : "python3");
	}
	if (!strcmp(expr, "managedPython")) {
		char python[PATH_MAX], site[PATH_MAX];
		if (!c->revision || !*c->revision)
			return fail(e, "environmentRevisionId is required for this NPU workload%s%s", "", "");
		if (broker_managed_python(c->revision, python, site, sizeof(python), e) != 0)
			return NULL;
		return strdup(python);
	}
	if (!strcmp(expr, "workspaceRoot"))
		return strdup(c->workspace);
	if (!strncmp(expr, "input:", 6))
		return broker_input_copy(c, expr + 6, e);
	if (!strncmp(expr, "repo:", 5))
		return repo_path(c->b, expr + 5, source, e);
	if (!strncmp(expr, "env:", 4)) {
		const char *rest = expr + 4, *sep = strstr(rest, ":-");
		char *name = sep ? strndup(rest, (size_t)(sep - rest)) : strdup(rest);
		const char *v = name ? getenv(name) : NULL;
		char *value = v ? sbx_trim_dup(v, strlen(v)) : NULL;
		if (value && *value) {
			free(name);
			return value;
		}
		free(value);
		if (sep) {
			char *fallback = sbx_trim_dup(sep + 2, strlen(sep + 2));
			char *r = fallback ? evaluate(c, fallback, source, depth + 1, e) : NULL;
			free(fallback);
			free(name);
			return r;
		}
		char *r = fail(e, "Environment variable %s is required by NPU workload command template: %s", name ? name : "",
			       source);
		free(name);
		return r;
	}
	return fail(e, "Unsupported NPU workload command template expression: %s%s", expr, "");
}

char *broker_expand(const struct broker_template_ctx *c, const char *text, struct sbx_error *e)
{
	size_t cap = strlen(text) + 1, len = 0;
	char *out = malloc(cap);
	const char *p = text;
	if (!out)
		return NULL;
	while (*p) {
		const char *open = strstr(p, "${"), *close = open ? strchr(open + 2, '}') : NULL;
		size_t lit = close ? (size_t)(open - p) : strlen(p);
		char *value = NULL;
		if (close) {
			char *expr = sbx_trim_dup(open + 2, (size_t)(close - open - 2));
			char *source = strndup(open, (size_t)(close - open + 1));
			value = expr && source ? evaluate(c, expr, source, 0, e) : NULL;
			free(expr);
			free(source);
			if (!value) {
				free(out);
				return NULL;
			}
		}
		size_t need = len + lit + (value ? strlen(value) : 0) + 1;
		if (need > EXPANDED_MAX) {
			free(value);
			free(out);
			return fail(e, "NPU workload command template expands beyond 64 KiB: %s%s", text, "");
		}
		if (need > cap) {
			char *grown = realloc(out, need);
			if (!grown) {
				free(value);
				free(out);
				return NULL;
			}
			out = grown;
			cap = need;
		}
		memcpy(out + len, p, lit);
		len += lit;
		if (value) {
			memcpy(out + len, value, strlen(value));
			len += strlen(value);
			free(value);
		}
		p = close ? close + 1 : p + lit;
	}
	out[len] = '\0';
	if (strspn(out, " \t\r\n") == len) {
		free(out);
		return fail(e, "NPU workload command template resolved to an empty value: %s%s", text, "");
	}
	return out;
}
