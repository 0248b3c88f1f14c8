/* sbx-report — the workload's side of the worker channel, for shells:
 * one message per call (progress, metrics, params, tags, log lines,
 * checkpoints, media, the terminal result or error), checked against the
 * same schemas the supervisor enforces, written to $SBX_CHANNEL_FD. */
#include "../lib/channel.h"
#include "../lib/cli.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/json.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Taken by every sender in a sandbox, the Python module too. */
#define SBX_REPORT_LOCK "/tmp/.sbx-report.lock"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-report state STATE [--message M]\n"
		"       sbx-report progress FRACTION [--message M]     (0 to 1)\n"
		"       sbx-report metric NAME VALUE [--step N] [--unit U]\n"
		"       sbx-report params KEY=VALUE...                 (numbers and true/false stay typed)\n"
		"       sbx-report tags KEY=VALUE...\n"
		"       sbx-report log debug|info|warning|error MESSAGE\n"
		"       sbx-report warning MESSAGE [--code C]\n"
		"       sbx-report diagnostic MESSAGE\n"
		"       sbx-report checkpoint PATH [--step N]          (below /scratch/checkpoints)\n"
		"       sbx-report media PATH [--kind K] [--caption C] (below /scratch/media)\n"
		"       sbx-report result [SUMMARY-JSON]\n"
		"       sbx-report error MESSAGE [--code C]\n"
		"       sbx-report send JSON                           (any message, as is)\n"
		"\n"
		"Writes one framed message to the descriptor named by $SBX_CHANNEL_FD. See sbx-report(1).\n");
	sbx_cli_print_exit_codes(out);
}

struct opts {
	const char *message, *code, *unit, *kind, *caption;
	long long step;
	bool has_step;
};

/* "3" -> 3, "0.5" -> 0.5, "true" -> true, else a string. */
static json_t *typed(const char *v)
{
	char *end;
	if (!strcmp(v, "true") || !strcmp(v, "false"))
		return json_boolean(!strcmp(v, "true"));
	long long i = strtoll(v, &end, 10);
	if (*v && !*end)
		return json_integer(i);
	double d = strtod(v, &end);
	if (*v && !*end)
		return json_real(d);
	return json_string(v);
}

static json_t *pairs(int argc, char **argv, bool strings)
{
	json_t *o = json_object();
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq || eq == argv[i])
			sbx_cli_usage_error("sbx-report", "expected KEY=VALUE");
		*eq = '\0';
		json_object_set_new(o, argv[i], strings ? json_string(eq + 1) : typed(eq + 1));
	}
	return o;
}

static double number(const char *what, const char *text)
{
	char *end;
	double d = strtod(text, &end);
	if (!*text || *end) {
		char m[128];
		snprintf(m, sizeof(m), "%s: '%.40s' is not a number", what, text);
		sbx_cli_usage_error("sbx-report", m);
	}
	return d;
}

static void need(int argc, int n, const char *what)
{
	if (argc != n)
		sbx_cli_usage_error("sbx-report", what);
}

static json_t *build(const char *cmd, int argc, char **argv, const struct opts *o)
{
	json_t *m = NULL;
	if (!strcmp(cmd, "state")) {
		need(argc, 1, "state takes STATE");
		m = json_pack("{s:s,s:s}", "type", "state", "state", argv[0]);
	} else if (!strcmp(cmd, "progress")) {
		need(argc, 1, "progress takes FRACTION");
		m = json_pack("{s:s,s:f}", "type", "progress", "progress", number("progress", argv[0]));
	} else if (!strcmp(cmd, "metric")) {
		need(argc, 2, "metric takes NAME VALUE");
		m = json_pack("{s:s,s:s,s:f}", "type", "metric", "name", argv[0], "value", number("metric", argv[1]));
		if (o->unit)
			json_object_set_new(m, "unit", json_string(o->unit));
	} else if (!strcmp(cmd, "params") || !strcmp(cmd, "tags")) {
		m = json_pack("{s:s,s:o}", "type", cmd, cmd, pairs(argc, argv, !strcmp(cmd, "tags")));
	} else if (!strcmp(cmd, "log")) {
		need(argc, 2, "log takes LEVEL MESSAGE");
		m = json_pack("{s:s,s:s,s:s}", "type", "user_log", "level", argv[0], "message", argv[1]);
	} else if (!strcmp(cmd, "warning") || !strcmp(cmd, "diagnostic") || !strcmp(cmd, "error")) {
		need(argc, 1, "takes MESSAGE");
		m = json_pack("{s:s,s:s}", "type", cmd, "message", argv[0]);
		if (o->code && strcmp(cmd, "diagnostic"))
			json_object_set_new(m, "code", json_string(o->code));
	} else if (!strcmp(cmd, "checkpoint") || !strcmp(cmd, "media")) {
		need(argc, 1, "takes PATH");
		m = json_pack("{s:s,s:s}", "type", cmd, "path", argv[0]);
		if (o->kind && !strcmp(cmd, "media"))
			json_object_set_new(m, "kind", json_string(o->kind));
		if (o->caption && !strcmp(cmd, "media"))
			json_object_set_new(m, "caption", json_string(o->caption));
	} else if (!strcmp(cmd, "result")) {
		m = json_pack("{s:s}", "type", "result");
		if (argc == 1) {
			struct sbx_error e;
			json_t *summary = sbx_json_parse(argv[0], strlen(argv[0]), "SUMMARY-JSON", &e);
			if (!summary)
				sbx_die(&e);
			json_object_set_new(m, "summary", summary);
		} else if (argc > 1) {
			sbx_cli_usage_error("sbx-report", "result takes at most one SUMMARY-JSON");
		}
	} else if (!strcmp(cmd, "send")) {
		struct sbx_error e;
		need(argc, 1, "send takes JSON");
		if (!(m = sbx_json_parse(argv[0], strlen(argv[0]), "JSON", &e)))
			sbx_die(&e);
		return m;
	} else {
		sbx_cli_usage_error("sbx-report", "unknown command (see --help)");
	}
	if (o->message && (!strcmp(cmd, "state") || !strcmp(cmd, "progress")))
		json_object_set_new(m, "message", json_string(o->message));
	if (o->has_step && (!strcmp(cmd, "metric") || !strcmp(cmd, "checkpoint")))
		json_object_set_new(m, "step", json_integer(o->step));
	return m;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "message", required_argument, NULL, 'm' }, { "code", required_argument, NULL, 'c' },
		{ "unit", required_argument, NULL, 'u' }, { "kind", required_argument, NULL, 'k' },
		{ "caption", required_argument, NULL, 'C' }, { "step", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' }, { "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { 0 };
	struct sbx_error e;
	int c;

	sbx_diag_program("sbx-report");
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case 'm': o.message = optarg; break;
		case 'c': o.code = optarg; break;
		case 'u': o.unit = optarg; break;
		case 'k': o.kind = optarg; break;
		case 'C': o.caption = optarg; break;
		case 's': o.step = sbx_cli_parse_long("--step", optarg, 0, 1L << 62); o.has_step = true; break;
		case 'h': usage(stdout); return SBX_EXIT_OK;
		case 'V': sbx_cli_print_version("sbx-report"); return SBX_EXIT_OK;
		default: sbx_cli_bad_option("sbx-report", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		sbx_cli_usage_error("sbx-report", "a command is required (see --help)");
	json_t *m = build(argv[optind], argc - optind - 1, argv + optind + 1, &o);
	const char *type;
	char why[200];
	if (sbx_channel_check(m, &type, why, sizeof(why)) < 0) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "bad-message", "%s", why);
		sbx_die(&e);
	}
	const char *fd_text = getenv("SBX_CHANNEL_FD");
	if (!fd_text || !*fd_text) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "no-channel", "SBX_CHANNEL_FD is not set: not running under sbx-run");
		sbx_die(&e);
	}
	int fd = (int)sbx_cli_parse_long("SBX_CHANNEL_FD", fd_text, 0, 65535);
	size_t len;
	char *frame = sbx_channel_encode(m, &len);
	json_decref(m);
	/* One frame at a time from every reporter of this sandbox (shells,
	 * threads, the Python module): a frame larger than the socket buffer
	 * is written in pieces another writer could otherwise split. */
	int lock = open(SBX_REPORT_LOCK, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (lock >= 0)
		(void)!flock(lock, LOCK_EX);
	if (!frame || sbx_write_all(fd, frame, len) != 0) {
		sbx_error_set(&e, SBX_EXIT_INTERNAL, "write-failed", "channel fd %d: %s", fd, strerror(errno));
		free(frame);
		sbx_die(&e);
	}
	free(frame);
	if (lock >= 0)
		close(lock);
	return SBX_EXIT_OK;
}
