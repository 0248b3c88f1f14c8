/* commands.c — sbx-run's two small commands beside a run: `cancel DIR`
 * (SIGTERM to the supervisor recorded there) and `verify` (where a signed
 * event stream breaks). */
#include "run.h"
#include "../lib/cli.h"
#include "../lib/diag.h"
#include "event_sign.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "supervisor_record.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

/* `sbx-run cancel DIR`: SIGTERM to the supervisor recorded there, if it is
 * still that process (pid and start time both match). */
int run_cancel_command(const char *dir)
{
	struct sbx_error e;
	pid_t pid = 0;
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	bool ok = dfd >= 0 && sbx_supervisor_alive(dfd, ".", &pid) && kill(pid, SIGTERM) == 0;
	if (dfd >= 0)
		close(dfd);
	if (!ok) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "not-running", "%s: no running execution to cancel", dir);
		sbx_die(&e);
	}
	json_t *out = json_pack("{s:b,s:i}", "cancelRequested", 1, "supervisorPid", (int)pid);
	return sbx_json_answer(out);
}

/* Whether line n of the stream file at path carries MAC mac. */
static bool mac_of_line(const char *path, json_int_t n, const char *mac)
{
	FILE *in = path ? fopen(path, "re") : NULL;
	char *line = NULL;
	size_t cap = 0;
	json_int_t number = 0;
	bool found = false;
	while (in && getline(&line, &cap, in) >= 0)
		if (++number == n) {
			char want[80];
			snprintf(want, sizeof(want), ",\"mac\":\"%.64s\"}", mac);
			size_t l = strcspn(line, "\r\n"), w = strlen(want);
			found = strlen(mac) == 64 && l >= w && memcmp(line + l - w, want, w) == 0;
			break;
		}
	free(line);
	if (in)
		fclose(in);
	return found;
}

/* A manifest file (at most 64 MiB): {ok, manifest} when its MAC holds;
 * with events, its lastMac must be the MAC of event line events.count. */
static json_t *verify_manifest(const char *path, const struct sbx_signer *key, struct sbx_error *e)
{
	size_t len;
	char *text = sbx_read_file_capped(path, 64u << 20, &len, e), hex[65];
	const char *why = NULL;
	if (!text)
		sbx_die(e);
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		text[--len] = '\0';
	json_t *m = sbx_verify_signed(text, len, key->key, key->key_len, hex, &why);
	free(text);
	if (!m)
		return json_pack("{s:b,s:s}", "ok", 0, "reason", why);
	return json_pack("{s:b,s:o}", "ok", 1, "manifest", m);
}

/* `sbx-run verify --key-file K [--manifest M] [EVENTS|-]`: where a signed
 * stream (or manifest) breaks. */
int run_verify_command(int argc, char **argv)
{
	struct sbx_signer key = { 0 };
	struct sbx_error e;
	const char *input = "-", *manifest = NULL;

	if (argc >= 5 && !strcmp(argv[3], "--manifest")) {
		manifest = argv[4];
		memmove(argv + 3, argv + 5, sizeof(char *) * (size_t)(argc - 5));
		argc -= 2;
	}
	if (argc < 3 || strcmp(argv[1], "--key-file") != 0 || argc > 4)
		sbx_cli_usage_error("sbx-run", "verify --key-file KEY [--manifest MANIFEST] [EVENTS|-]");
	if (sbx_signer_from_file(&key, argv[2], &e) != 0)
		sbx_die(&e);
	json_t *verdict = manifest ? verify_manifest(manifest, &key, &e) : NULL;
	if (argc == 4)
		input = argv[3];
	if (!manifest || (argc == 4 && json_is_true(json_object_get(verdict, "ok")))) {
		FILE *in = strcmp(input, "-") ? fopen(input, "re") : stdin;
		if (!in) {
			sbx_error_set(&e, SBX_EXIT_USAGE, "bad-path", "%s: %s", input, strerror(errno));
			sbx_die(&e);
		}
		json_t *events = sbx_verify_stream(in, key.key, key.key_len);
		if (in != stdin)
			fclose(in);
		if (!manifest) {
			verdict = events;
		} else {
			json_t *chain = json_object_get(json_object_get(verdict, "manifest"), "events");
			bool ok = json_is_true(json_object_get(events, "ok")) &&
				  json_integer_value(json_object_get(events, "events")) >= json_integer_value(json_object_get(chain, "count")) &&
				  mac_of_line(argc == 4 ? input : NULL, json_integer_value(json_object_get(chain, "count")),
						  sbx_json_string_or(chain, "lastMac", ""));
			json_object_set_new(verdict, "events", events);
			if (!ok) {
				json_object_set_new(verdict, "ok", json_false());
				json_object_set_new(verdict, "reason", json_string("the manifest's lastMac is not the MAC of its last event"));
			}
		}
	}
	OPENSSL_cleanse(key.key, sizeof(key.key));
	sbx_json_print(stdout, verdict);
	int rc = json_is_true(json_object_get(verdict, "ok")) ? SBX_EXIT_OK : SBX_EXIT_INTEGRITY;
	json_decref(verdict);
	return rc;
}
