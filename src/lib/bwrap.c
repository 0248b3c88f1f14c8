/* bwrap.c — locating bwrap and reading its version and option list. */
#include "bwrap.h"
#include "spawn.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BWRAP_INFO_CAP (1u << 20)

const char *const sbx_bwrap_required_options[] = {
	"--cap-drop", "--die-with-parent", "--new-session",
	"--seccomp", "--unshare-all", "--unshare-user", "--bind-fd", "--ro-bind-fd", "--json-status-fd", NULL,
};

const char *sbx_bwrap_requested(const char *flag)
{
	const char *v;

	if (flag && *flag)
		return flag;
	if ((v = getenv("SBX_BWRAP")) && *v)
		return v;
	if ((v = getenv("SCIENCE_AGENT_BWRAP_PATH")) && *v)
		return v;
	return "bwrap";
}

static bool run_info(const char *bwrap, const char *arg, int timeout_ms, struct sbx_capture *c)
{
	const char *argv[] = { bwrap, arg, NULL };
	struct sbx_spawn s = { .argv = argv, .stdin_fd = -1 };
	struct sbx_error e;

	return sbx_spawn_capture(&s, timeout_ms, BWRAP_INFO_CAP, c, &e) == 0;
}

void sbx_bwrap_version(const char *bwrap, int timeout_ms, char *out, size_t size)
{
	struct sbx_capture c;

	out[0] = '\0';
	if (!run_info(bwrap, "--version", timeout_ms, &c))
		return;
	const char *v = strstr(c.out, "bubblewrap ");
	if (v && !c.timed_out) {
		v += strlen("bubblewrap ");
		size_t n = strspn(v, "0123456789.");
		if (n > 0 && n < size) {
			memcpy(out, v, n);
			out[n] = '\0';
		}
	}
	sbx_capture_free(&c);
}

int sbx_version_compare(const char *a, const char *b)
{
	for (;;) {
		char *ea, *eb;
		unsigned long x = strtoul(a, &ea, 10), y = strtoul(b, &eb, 10);
		if (x != y)
			return x < y ? -1 : 1;
		if (*ea != '.' && *eb != '.')
			return 0;
		a = *ea == '.' ? ea + 1 : ea;
		b = *eb == '.' ? eb + 1 : eb;
	}
}

/* True when opt appears in text as a whole word ("--seccomp" but not
 * "--seccomp-foo"). */
static bool lists_option(const char *text, const char *opt)
{
	size_t n = strlen(opt);
	for (const char *p = strstr(text, opt); p; p = strstr(p + 1, opt)) {
		bool start_ok = p == text || p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\n';
		char after = p[n];
		bool end_ok = after == '\0' || after == ' ' || after == '\t' || after == '\n' || after == '=';
		if (start_ok && end_ok)
			return true;
	}
	return false;
}

bool sbx_bwrap_check_help(const char *bwrap, int timeout_ms, char *missing, size_t size)
{
	struct sbx_capture c;

	missing[0] = '\0';
	if (!run_info(bwrap, "--help", timeout_ms, &c)) {
		snprintf(missing, size, "cannot run %s --help", bwrap);
		return false;
	}
	/* bwrap prints usage on stdout; a wrapper might use stderr. */
	const char *text = c.out_len ? c.out : c.err;
	if (c.timed_out || !*text) {
		snprintf(missing, size, "%s --help %s", bwrap, c.timed_out ? "timed out" : "printed nothing");
		sbx_capture_free(&c);
		return false;
	}
	for (size_t i = 0; sbx_bwrap_required_options[i]; i++) {
		if (lists_option(text, sbx_bwrap_required_options[i]))
			continue;
		size_t used = strlen(missing);
		snprintf(missing + used, size - used, "%s%s", used ? " " : "", sbx_bwrap_required_options[i]);
	}
	sbx_capture_free(&c);
	return true;
}
