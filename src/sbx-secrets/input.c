/* input.c — what stdin holds: a value alone, or a JSON document with one;
 * read into locked pages, never echoed into a diagnostic. */
#include "secrets.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"

#include <openssl/crypto.h>
#include <string.h>
#include <unistd.h>

void input_value(struct sbx_secret *s)
{
	struct sbx_error e;
	size_t len;
	/* One byte more than a value may hold: its trailing newline. */
	char *text = sbx_secret_read_fd(STDIN_FILENO, SBX_SECRET_VALUE_MAX + 1, &len, "stdin", &e);
	if (!text) {
		if (!strcmp(e.code, "too-large"))
			sbx_error_set(&e, SBX_EXIT_USAGE, "bad-value", "value: more than %d bytes on stdin", SBX_SECRET_VALUE_MAX);
		sbx_die(&e);
	}
	if (len && text[len - 1] == '\n')
		len--;
	int rc = sbx_secret_set_value(s, text, len, &e);
	sbx_secret_buffer_free(text, SBX_SECRET_VALUE_MAX + 3);
	if (rc != 0)
		sbx_die(&e);
}

json_t *input_json(void)
{
	struct sbx_error e;
	json_error_t je;
	size_t len;
	char *text = sbx_secret_read_fd(STDIN_FILENO, SECRETS_INPUT_MAX, &len, "stdin", &e);
	if (!text)
		sbx_die(&e);
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	sbx_secret_buffer_free(text, SECRETS_INPUT_MAX + 2);
	if (!doc || !json_is_object(doc)) {
		/* jansson quotes the input "near '...'": that part is dropped. */
		char *near = strstr(je.text, " near ");
		if (near)
			*near = '\0';
		sbx_error_set(&e, SBX_EXIT_USAGE, "bad-json", "stdin:%d:%d: %s", doc ? 1 : je.line, doc ? 1 : je.column,
			      doc ? "must be a JSON object" : je.text);
		input_forget(doc);
		sbx_die(&e);
	}
	return doc;
}

void input_forget(json_t *doc)
{
	json_t *v = json_object_get(doc, "value");
	if (json_is_string(v))
		OPENSSL_cleanse((char *)json_string_value(v), json_string_length(v));
	json_decref(doc);
}
