/* test_run_document.c — a job's run document: the claim (run id, nonce),
 * every refusal naming its field, and the URL rule (https, plain http to
 * loopback only); no network is touched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../src/sbx-run/object_store.h"
#include "../../src/sbx-run/document.h"

#include <stdio.h>
#include <string.h>

#define GRANT "{\"url\":\"http://127.0.0.1:9/runs\",\"fields\":{\"key\":\"r/${filename}\",\"Policy\":\"p\"}}"
#define GOOD                                                                                                          \
	"{\"runId\":\"r1\",\"nonce\":\"n-123\",\"request\":{\"language\":\"shell\",\"code\":\"true\",\"workspace\":\"/w\"}," \
	"\"signingKey\":\"MDEyMzQ1Njc4OWFiY2RlZg==\",\"bootstrapDeleteUrl\":\"http://127.0.0.1:9/b?X-Amz-Signature=s\","      \
	"\"uploads\":{\"outputs\":" GRANT ",\"media\":" GRANT ",\"manifest\":{\"url\":\"https://store.example/m\"}}}"

static const struct sbx_curl *curl(void)
{
	struct sbx_error e;
	const struct sbx_curl *c = sbx_curl_load(&e);
	assert_non_null(c);
	return c;
}

/* The document GOOD with one member of path replaced by json (NULL: removed). */
static json_t *doc_with(const char *object, const char *member, const char *json)
{
	json_t *doc = json_loads(GOOD, 0, NULL), *at = doc;
	assert_non_null(doc);
	if (object) {
		char copy[64], *save = NULL;
		snprintf(copy, sizeof(copy), "%s", object);
		for (char *part = strtok_r(copy, ".", &save); part; part = strtok_r(NULL, ".", &save))
			at = json_object_get(at, part);
	}
	if (json)
		json_object_set_new(at, member, json_loads(json, JSON_DECODE_ANY, NULL));
	else if (member)
		json_object_del(at, member);
	return doc;
}

static void expect_refusal(json_t *doc, const char *needle)
{
	struct sbx_run_document d;
	struct sbx_error e = { 0 };
	assert_int_equal(sbx_run_document_parse(doc, curl(), &d, &e), -1);
	assert_int_equal(e.exit_code, 2);
	if (!strstr(e.message, needle))
		fail_msg("\"%s\" not in \"%s\"", needle, e.message);
	sbx_run_document_free(&d);
	json_decref(doc);
}

static void parses_good(void **state)
{
	(void)state;
	struct sbx_run_document d;
	struct sbx_error e = { 0 };
	json_t *doc = doc_with(NULL, NULL, NULL);
	assert_int_equal(sbx_run_document_parse(doc, curl(), &d, &e), 0);
	assert_int_equal(d.key_len, 16);
	assert_memory_equal(d.key, "0123456789abcdef", 16);
	assert_string_equal(json_string_value(json_object_get(d.request, "executionId")), "r1");
	/* The key is gone from the JSON once decoded. */
	assert_null(json_object_get(doc, "signingKey"));
	assert_null(d.checkpoints.url);
	sbx_run_document_free(&d);
	json_decref(doc);
}

static void refuses_by_field(void **state)
{
	(void)state;
	expect_refusal(doc_with(NULL, "extra", "1"), "extra: unknown field");
	expect_refusal(doc_with("uploads", "more", "{}"), "uploads.more: unknown field");
	expect_refusal(doc_with(NULL, "signingKey", "\"c2hvcnQ=\""), "signingKey");
	expect_refusal(doc_with(NULL, "signingKey", "\"not base64!\""), "signingKey");
	expect_refusal(doc_with(NULL, "runId", "\"../up\""), "runId");
	expect_refusal(doc_with(NULL, "deadlineMs", "0"), "deadlineMs");
	expect_refusal(doc_with("request", "executionId", "\"other\""), "request.executionId");
	expect_refusal(doc_with("uploads.outputs.fields", "key", "\"fixed\""), "uploads.outputs.fields");
	expect_refusal(doc_with("uploads.media.fields", "file", "\"x\""), "uploads.media.fields");
	expect_refusal(doc_with("uploads.media.fields", "n", "7"), "uploads.media.fields");
	expect_refusal(doc_with("uploads.manifest", "url", "\"http://192.0.2.1/m\""), "uploads.manifest.url");
	expect_refusal(doc_with(NULL, "bootstrapDeleteUrl", "\"ftp://127.0.0.1/b\""), "bootstrapDeleteUrl");
	expect_refusal(doc_with("uploads", "manifest", NULL), "uploads.manifest");
	json_t *twice = doc_with(NULL, "caps", "{\"events\":5}");
	json_object_set_new(json_object_get(twice, "request"), "caps", json_object());
	expect_refusal(twice, "caps: given twice");
}

static void claims_only_its_own(void **state)
{
	(void)state;
	struct sbx_error e = { 0 };
	const char *del = NULL;
	json_t *doc = doc_with(NULL, NULL, NULL);
	assert_int_equal(sbx_run_document_claim(doc, "r1", "n-123", &del, &e), 0);
	assert_non_null(del);
	assert_int_equal(sbx_run_document_claim(doc, "r1", "n-12", &del, &e), -1);
	assert_int_equal(e.exit_code, 9);
	assert_int_equal(sbx_run_document_claim(doc, "r1", "n-1234", &del, &e), -1);
	assert_int_equal(sbx_run_document_claim(doc, "r2", "n-123", &del, &e), -1);
	assert_int_equal(e.exit_code, 9);
	/* The nonce never appears in the message. */
	assert_null(strstr(e.message, "n-123"));
	json_decref(doc);
}

static void urls_https_or_loopback(void **state)
{
	(void)state;
	struct sbx_error e;
	const char *good[] = { "https://s3.example/b", "http://127.0.0.1:9000/b", "http://127.8.9.1/b", "http://[::1]:9/b",
			       "http://localhost:1/b" };
	const char *bad[] = { "http://10.0.0.1/b", "http://127.0.0.1.evil/b", "http://user:pw@127.0.0.1/b",
			      "http://[::ffff:127.0.0.1]/b", "file:///etc/passwd", "gopher://127.0.0.1/", "not a url",
			      "http://0x7f000001.example/b" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (sbx_store_url_check(curl(), good[i], "u", &e) != 0)
			fail_msg("%s refused: %s", good[i], e.message);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (sbx_store_url_check(curl(), bad[i], "u", &e) == 0)
			fail_msg("%s accepted", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parses_good),
		cmocka_unit_test(refuses_by_field),
		cmocka_unit_test(claims_only_its_own),
		cmocka_unit_test(urls_https_or_loopback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
